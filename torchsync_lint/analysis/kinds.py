"""The kinds of value the analysis tells apart, and how they combine.

The order, from least to most informative for a finding: no information (None) < a specific
host, model, loader or optimizer kind < UNKNOWN < CONTAINER < DEVICE. A name that may hold a
device tensor on some path may hold one: DEVICE wins a join.

A kind says *what* a value is as well as *where* it lives. A device tensor (DEVICE) and a Python
container of device tensors (CONTAINER: a tuple, list or dict, a model's dict-like output) are
apart because their operations are: a container's membership test, `len`, keys, iteration and
truth value read no tensor (host operations); indexing it, or its `.values()`, gives the
tensors it holds (DEVICE); formatting it formats them. A value whose shape the code does not
show stays DEVICE: evidence (analysis/evidence.py: `"mask" in batch`, `batch["x"]`,
`outputs.items()`, `model(**batch)`) makes it a container.
"""

from __future__ import annotations

import enum


class Kind(str, enum.Enum):
    DEVICE = "device"  # plausibly a tensor on an accelerator (or a value of unknown shape holding them)
    CONTAINER = "device-container"  # a tuple/list/dict (or dict-like output) holding device tensors
    MOVED = "moved"  # `.to(<accelerator>)`/`.cuda()` of an object of unknown type: a tensor or a module
    HOST_TENSOR = "host-tensor"  # a torch tensor that provably lives on the CPU
    HOST = "host"  # a Python value, numpy value, string, device object...: never a device tensor
    MODEL = "model"  # a torch.nn.Module that is, or may be, on an accelerator
    CPU_MODEL = "cpu-model"  # a torch.nn.Module built here and never moved: it stays on the CPU
    LOADER = "loader"  # a torch.utils.data.DataLoader: yields host batches
    DEVICE_LOADER = "device-loader"  # a loader whose batches arrive on the device (accelerate, Fabric)
    OPTIMIZER = "optimizer"  # a torch.optim.Optimizer (or an AMP GradScaler)
    PREPARED = "prepared"  # handed back by accelerate's `prepare`/Fabric's `setup`, type unknown: a
    # module on the device, a loader yielding device batches or an optimizer, told apart by use
    UNKNOWN = "unknown"


HOST_KINDS = frozenset({Kind.HOST, Kind.HOST_TENSOR})
# Values that hold device tensors: a tensor, or a container of them (what flows into a
# forward, a criterion or `torch.cat`; what formatting reads).
DEVICE_VALUES = frozenset({Kind.DEVICE, Kind.CONTAINER})
MODEL_KINDS = frozenset({Kind.MODEL, Kind.CPU_MODEL})
LOADER_KINDS = frozenset({Kind.LOADER, Kind.DEVICE_LOADER})
# Values a call `v(x)` runs a forward of.
CALLABLE_MODELS = frozenset({Kind.MODEL, Kind.CPU_MODEL, Kind.MOVED, Kind.PREPARED})


def join(kinds) -> Kind:
    """Combine the kinds a name may hold: "may be on the device" wins (ignores None = no info)."""
    seen = {k for k in kinds if k is not None}
    if not seen:
        return Kind.UNKNOWN
    if Kind.DEVICE in seen:
        return Kind.DEVICE
    if Kind.CONTAINER in seen:
        # a container on one path, a host value (`None`) or nothing known on another; a
        # moved object or a module on another path may be a tensor
        return Kind.CONTAINER if seen <= HOST_KINDS | {Kind.CONTAINER, Kind.UNKNOWN} else Kind.DEVICE
    if Kind.MOVED in seen and not seen & {Kind.HOST_TENSOR, Kind.CPU_MODEL}:
        return Kind.MOVED  # moved on some path (unless another path provably keeps it on the CPU)
    if len(seen) == 1:
        return seen.pop()
    if seen <= HOST_KINDS:
        return Kind.HOST_TENSOR
    if seen <= MODEL_KINDS:
        return Kind.MODEL  # moved on one path: may be on the device
    if seen <= LOADER_KINDS:
        return Kind.LOADER  # host batches on one path
    return Kind.UNKNOWN


def combine(*kinds: Kind | None) -> Kind | None:
    """Arithmetic: a device operand makes a device result; all-host stays host."""
    known = [k for k in kinds if k is not None]
    if Kind.DEVICE in known or Kind.MOVED in known:
        return Kind.DEVICE  # a module is no arithmetic operand: a moved operand is a tensor
    if Kind.CONTAINER in known:
        return Kind.CONTAINER  # `outs + [t]`, `pairs * 2`: a container still
    if known and all(k in HOST_KINDS for k in known):
        return Kind.HOST_TENSOR if Kind.HOST_TENSOR in known else Kind.HOST
    return Kind.UNKNOWN if known else None
