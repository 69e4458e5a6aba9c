"""One lookup over every library table (the few lines of glue the tables need).

Returns are short words the analysis maps to kinds (analysis/calls.py, ``_RETURNS``):
"device", "host", "host-tensor", "model", "cpu-model", "loader", "device-loader",
"optimizer", "object" (an opaque library object, tracked by its constructor's name),
"same" (what the first argument is), "prepared" (accelerate/Fabric: each argument placed for
the run), "accelerator-device".
"""

from __future__ import annotations

from torchsync_lint.knowledge import accelerate, diffusers, evaluate, gym, lightning, loaders, meters, python, transformers
from torchsync_lint.knowledge import torch as torch_knowledge

_CALLS: dict[str, str] = {**accelerate.CALLS, **evaluate.CALLS, **transformers.CALLS, **python.CALLS, **torch_knowledge.CALLS, **{q: "object" for q in lightning.FABRICS}}
_METHODS: dict[tuple[str, str], str] = {**accelerate.METHODS, **evaluate.METHODS}
_METHODS.update({(f, m): "prepared" for f in lightning.FABRICS for m in lightning.FABRIC_SETUP})
_METHODS.update({(f, m): "device-loader" for f in lightning.FABRICS for m in lightning.FABRIC_SETUP_LOADERS})
_ATTRIBUTES: dict[tuple[str, str], str] = {**accelerate.ATTRIBUTES, **{(f, "device"): "accelerator-device" for f in lightning.FABRICS}}
_STEP_METHODS = accelerate.STEP_METHODS | {(f, "backward") for f in lightning.FABRICS}


def call_returns(qualname: str, keywords: frozenset[str] = frozenset()) -> str | None:
    """What a call of the library callable ``qualname`` returns, if a table knows."""
    if qualname in _CALLS:
        return _CALLS[qualname]
    if qualname in loaders.LOADER_CLASSES:
        return "loader"
    for prefix, returns in transformers.CALL_PREFIXES:
        if qualname.startswith(prefix) and qualname.rsplit(".", 1)[-1][:1].islower():
            return returns
    if qualname.startswith(gym.ENV_FACTORIES):
        return "object"
    owner, _, method = qualname.rpartition(".")
    if method in transformers.MODEL_FACTORY_METHODS and qualname.startswith(transformers.MODEL_LIBRARIES):
        cls = owner.rsplit(".", 1)[-1]
        if any(w in cls for w in transformers.NON_MODEL_CLASS_WORDS):
            return "object"
        if any(w in cls for w in transformers.MODEL_CLASS_WORDS):
            return "model" if keywords & transformers.PLACING_KEYWORDS else "cpu-model"
    if qualname.startswith(diffusers.SCHEDULER_PACKAGES) and diffusers.SCHEDULER_WORD in qualname:
        return "object"
    return None


def method_returns(origin: str, method: str) -> str | None:
    """What ``method`` of an object made by ``origin`` returns, if a table knows."""
    if (origin, method) in _METHODS:
        return _METHODS[(origin, method)]
    if is_environment(origin) and method in gym.METHODS_RETURNING_HOST:
        return "host"
    return None


def attribute_returns(origin: str, attr: str) -> str | None:
    if (origin, attr) in _ATTRIBUTES:
        return _ATTRIBUTES[(origin, attr)]
    if origin.startswith(diffusers.SCHEDULER_PACKAGES) and diffusers.SCHEDULER_WORD in origin and attr in diffusers.HOST_TENSOR_TABLES:
        return "host-tensor"
    return None


def stored_field(origin: str, attr: str) -> tuple[str, int] | None:
    """(method, argument position) whose argument the field ``attr`` of an object made by
    ``origin`` keeps (`timm.utils.AverageMeter().val` keeps `update`'s first argument)."""
    return meters.STORED_FIELDS.get(origin, {}).get(attr)


def is_step_method(origin: str, method: str) -> bool:
    """`accelerator.backward(loss)`: a training step's backward pass."""
    return (origin, method) in _STEP_METHODS


def reads_arguments_on_host(origin: str, method: str) -> bool:
    """Does ``method`` convert the tensors it is given to host values at once?"""
    return (origin, method) in evaluate.HOST_READING_METHODS


def reads_itself_on_host(origin: str, method: str) -> bool:
    """Does ``method`` read the object's own device state back (`scaler.get_scale()`)?"""
    return (origin, method) in torch_knowledge.SELF_READING_METHODS


def is_environment(origin: str) -> bool:
    return origin.startswith(gym.ENV_FACTORIES)


def is_item_wrapper(qualname: str) -> bool:
    return qualname in loaders.ITEM_WRAPPERS


def canonical_prefixes() -> tuple[tuple[str, str], ...]:
    return accelerate.CANONICAL_PREFIXES
