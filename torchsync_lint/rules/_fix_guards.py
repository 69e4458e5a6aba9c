"""Checks a fix runs before it is offered: would the edit change what the program computes, or
make it fail at run time? Each answers conservatively (what it cannot see counts against the
fix); a withheld fix leaves the finding in place, so precision is unaffected.

- ``plain_device``: a `.to()` argument that is certainly a device (never a tensor or a dtype),
  so that it can move into a factory's `device=` (TSL305);
- ``passes_generator``, ``movable_factory``: a factory call whose result `device=` would not
  reproduce (an explicit `torch.Generator`, `out=`, `requires_grad=True`...), and
  ``integer_arange``: an `arange` whose values every kernel computes alike (TSL305);
- ``yields_per_worker``: a DataLoader whose dataset may be an `IterableDataset` that does not
  shard by `get_worker_info()`, where every worker yields every sample (TSL303);
- ``serves_device_tensors``: a local dataset class whose `__getitem__` returns device tensors,
  which can be neither pinned nor read in a worker process (TSL302, TSL303);
- ``written_in_place``: a copy source the loop overwrites in place, which an asynchronous copy
  may read after the overwrite (TSL301);
- ``custom_batch``: a loader's whole batch built by a user `collate_fn`, whose `.to()` may not
  take `non_blocking` (TSL301);
- ``uses_streams``: a module with streams of its own, where an asynchronous copy may be read
  from another stream before it lands (TSL301);
- ``shadowed``: a name a fix's added import would bind, rebound where the edit lands.
"""

from __future__ import annotations

import re

import libcst as cst

from torchsync_lint.analysis import Kind
from torchsync_lint.analysis.hotloops import ITER_WRAPPERS
from torchsync_lint.analysis.loaders import LoaderInfo, literal_value, loaders
from torchsync_lint.pytree import evaluated_literal

_MAX_DEPTH = 6
_DEVICE_TYPES = "cpu|cuda|mps|xpu|xla|meta|hpu|npu|mtia|ipu|hip|ve|lazy|vulkan|maia|privateuseone"
_DEVICE_STRING = re.compile(rf"^(?:{_DEVICE_TYPES})(?::\d+)?$")
_DEVICE_PREFIX = re.compile(rf"^(?:{_DEVICE_TYPES})(?::|$)")
# Calls that return a `torch.device` or a device index.
_DEVICE_CALLS = frozenset({"torch.device", "torch.cuda.current_device", "torch.get_default_device", "torch.accelerator.current_accelerator"})


def plain_device(analysis, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """``expr`` is certainly a device: a device string, an ordinal, a `torch.device(...)`, an
    object's `.device`, or a name bound only to those (a parameter: by every same-module call
    site). Never a tensor (`.to(other)` also converts the dtype) nor a dtype."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.SimpleString):
        value = evaluated_literal(expr)
        return isinstance(value, str) and bool(_DEVICE_STRING.match(value))
    if isinstance(expr, cst.FormattedString):  # f"cuda:{rank}"
        head = expr.parts[0] if expr.parts else None
        return isinstance(head, cst.FormattedStringText) and bool(_DEVICE_PREFIX.match(head.value))
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Modulo)):
        ok, value = literal_value(expr.left)  # "cuda:" + str(rank), "cuda:%d" % rank
        return ok and isinstance(value, str) and bool(_DEVICE_PREFIX.match(value))
    if isinstance(expr, cst.Integer):
        return True  # `.to(0)`: an ordinal
    if isinstance(expr, cst.IfExp):
        return plain_device(analysis, expr.body, depth + 1) and plain_device(analysis, expr.orelse, depth + 1)
    if isinstance(expr, cst.Call):
        return (analysis.qualname(expr.func) or "") in _DEVICE_CALLS
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "device"  # `x.device`, `accelerator.device`, `args.device`
    if isinstance(expr, cst.Name):
        defs = analysis.values.reaching_defs(expr)
        return bool(defs) and all(_plain_device_def(analysis, d, depth + 1) for d in defs)
    return False


def _plain_device_def(analysis, d, depth: int) -> bool:
    if d.how == "assign" and d.value is not None:
        return plain_device(analysis, d.value, depth)
    if d.how != "param" or d.func is None or d.param is None:
        return False
    annotation = d.param.annotation
    if annotation is not None and analysis.qualname(annotation.annotation) == "torch.device":
        return True
    index = analysis.index
    sites = index.call_sites(d.func)
    if not sites:
        return False  # called from elsewhere: anything may come in
    for call in sites:
        arg = index.argument_for(call, d.func, d.param)
        if arg is None or not plain_device(analysis, arg, depth + 1):
            return False
    return True


def passes_generator(analysis, call: cst.Call) -> bool:
    """The call draws from an explicit generator (`generator=g`, or `g` passed positionally)."""
    for a in call.args:
        if a.keyword is not None:
            if a.keyword.value == "generator" and literal_value(a.value) != (True, None):
                return True
        elif _is_generator(analysis, a.value, 0):
            return True
    return False


def _is_generator(analysis, expr: cst.BaseExpression, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        if analysis.qualname(expr.func) == "torch.Generator":
            return True
        func = expr.func  # `torch.Generator().manual_seed(0)` returns the generator
        return isinstance(func, cst.Attribute) and func.attr.value == "manual_seed" and _is_generator(analysis, func.value, depth + 1)
    if isinstance(expr, cst.Name):
        return any(d.how == "assign" and d.value is not None and _is_generator(analysis, d.value, depth + 1) for d in analysis.values.reaching_defs(expr))
    return False


# Keywords of the CPU factories that mean the same with `device=` added.
_FACTORY_KEYWORDS = frozenset({"dtype", "size", "low", "high", "mean", "std", "start", "end", "step", "steps", "fill_value", "n", "m", "memory_format"})


def movable_factory(analysis, call: cst.Call, factory: str) -> bool:
    """Would `device=` on this factory call build what `.to(device)` of its result does?"""
    if any(a.star for a in call.args):
        return False  # `**kw` may hold `device` or `out`
    for a in call.args:
        if a.keyword is None:
            continue
        key = a.keyword.value
        if key in ("requires_grad", "pin_memory"):
            # `requires_grad=True`: the device tensor becomes the leaf (before, a CPU leaf
            # fed it through `.to()`); `pin_memory=True` raises for a device tensor.
            if literal_value(a.value) != (True, False):
                return False
        elif key == "generator":
            if literal_value(a.value) != (True, None):
                return False  # a CPU generator cannot draw device numbers
        elif key not in _FACTORY_KEYWORDS:
            return False  # `out=`, `layout=`, `names=`...: keep the user's call
    if passes_generator(analysis, call):
        return False
    if factory == "normal":  # only `normal(mean, std, size)` with numbers takes `device=`
        positional = [a for a in call.args if a.keyword is None]
        return len(positional) >= 3 or any(a.keyword is not None and a.keyword.value == "size" for a in call.args)
    return True


def integer_arange(call: cst.Call) -> bool:
    """`arange(n)`, or integer literals only: the same numbers from the CPU and device kernels.

    With a fractional start or step they differ: the CPU kernel accumulates a float32
    arange in double, CUDA's in float32 (aten/src/ATen/native/cuda/RangeFactories.cu)."""
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) == 1 and not keywords & {"start", "step", "end"}:
        return True  # start 0, step 1: every kernel computes the index itself
    numbers = [a.value for a in call.args if a.keyword is None or a.keyword.value in ("start", "end", "step")]
    return "dtype" not in keywords and all(isinstance(v, cst.Integer) or (isinstance(v, cst.UnaryOperation) and isinstance(v.expression, cst.Integer)) for v in numbers)


# -- IterableDataset (TSL303) ----------------------------------------------------------------------
_ITERABLE_BASES = frozenset(
    {
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
        "torch.utils.data.IterDataPipe",
        "torch.utils.data.datapipes.datapipe.IterDataPipe",
    }
)
_ITERABLE_CLASSES = frozenset({"torch.utils.data.ChainDataset", "torch.utils.data.dataset.ChainDataset"})
_WORKER_INFO = frozenset({"torch.utils.data.get_worker_info", "torch.utils.data._utils.worker.get_worker_info"})


def yields_per_worker(analysis, info: LoaderInfo) -> str | None:
    """The name of a dataset the loader may read that yields every sample once per worker:
    an `IterableDataset` (a local class deriving from it, directly or through local bases, or
    a local class with `__iter__`, no `__getitem__` and a base we cannot see) that consults
    `get_worker_info()` neither in its own methods nor in the loader's `worker_init_fn`.
    When the dataset cannot be traced to its constructor, any such class of the module counts."""
    index = analysis.index
    if _worker_init_shards(analysis, info):
        return None
    calls = _constructor_calls(analysis, info)
    if calls is None:  # untraceable: it may be any dataset class of this module
        candidates = list(index.classes)
    else:
        candidates = []
        for call in calls:
            qn = analysis.qualname(call.func) or ""
            if qn in _ITERABLE_CLASSES:
                return qn.rsplit(".", 1)[-1]
            if isinstance(call.func, cst.Name) and call.func.value in index.classes:
                candidates.append(call.func.value)
    for name in candidates:
        if _iterable_class(analysis, name, 0) and not _consults_worker_info(analysis, name, 0):
            return name
    return None


def _constructor_calls(analysis, info: LoaderInfo) -> list[cst.Call] | None:
    """The calls the loader's dataset may come from, through same-module factory functions;
    None when some path cannot be traced."""
    tracker = loaders(analysis)
    index = analysis.index
    if info.dataset is None:
        return None
    calls = tracker.dataset_calls(info)
    if not calls:
        return None
    out: list[cst.Call] = []
    todo = list(calls)
    seen: set[int] = set()
    while todo:
        call = todo.pop()
        if id(call) in seen or len(seen) > 32:
            continue
        seen.add(id(call))
        target = index.target_of(call)
        if target is not None and not (isinstance(call.func, cst.Name) and call.func.value in index.classes):
            returned = index.returns.get(target, [])
            if not returned:
                return None
            for r in returned:
                more = [r] if isinstance(r, cst.Call) else None
                if isinstance(r, cst.Name):
                    more = [d.value for d in analysis.values.reaching_defs(r) if d.how == "assign" and isinstance(d.value, cst.Call)]
                if not more:
                    return None
                todo += more
            continue
        out.append(call)
    return out


def _class_chain(analysis, name: str, depth: int):
    """The local class ``name`` and its local bases (depth-limited)."""
    info = analysis.index.classes.get(name)
    if info is None or depth > 5:
        return
    yield info
    for base in info.node.bases:
        value = base.value.value if isinstance(base.value, cst.Subscript) else base.value
        if isinstance(value, cst.Name) and value.value in analysis.index.classes and value.value != name:
            yield from _class_chain(analysis, value.value, depth + 1)


def _iterable_class(analysis, name: str, depth: int) -> bool:
    chain = list(_class_chain(analysis, name, depth))
    unseen_base = False
    for info in chain:
        for base in info.node.bases:
            value = base.value.value if isinstance(base.value, cst.Subscript) else base.value
            qn = analysis.qualname(value)
            if qn in _ITERABLE_BASES:
                return True
            local = isinstance(value, cst.Name) and value.value in analysis.index.classes
            if not local and qn != "object" and not (qn or "").startswith("torch.utils.data."):
                unseen_base = True  # an import, or a name from `import *`: it may be an IterableDataset
    methods = {m for info in chain for m in info.methods}
    return unseen_base and "__iter__" in methods and "__getitem__" not in methods


def _consults_worker_info(analysis, name: str, depth: int) -> bool:
    for info in _class_chain(analysis, name, depth):
        for method in info.methods.values():
            if _calls_worker_info(analysis, method):
                return True
    return False


def _calls_worker_info(analysis, node: cst.CSTNode) -> bool:
    finder = _WorkerInfoFinder(analysis)
    node.visit(finder)
    return finder.found


class _WorkerInfoFinder(cst.CSTVisitor):
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        if (self.analysis.qualname(node.func) or "") in _WORKER_INFO:
            self.found = True
        return not self.found


def _worker_init_fn(analysis, info: LoaderInfo) -> cst.FunctionDef | None:
    arg = next((a.value for a in info.call.args if a.keyword is not None and a.keyword.value == "worker_init_fn"), None)
    if isinstance(arg, cst.Name):
        return analysis.index.functions.get(arg.value)
    return None


def _worker_init_shards(analysis, info: LoaderInfo) -> bool:
    """The docs' recipe: a `worker_init_fn` that splits the dataset by `get_worker_info()`."""
    func = _worker_init_fn(analysis, info)
    return func is not None and _calls_worker_info(analysis, func)


# -- datasets that hold device tensors (TSL302, TSL303) ----------------------------------------------
def serves_device_tensors(analysis, info: LoaderInfo) -> bool:
    """The loader's dataset is a local class whose `__getitem__` returns device tensors: pinning
    them raises, and worker processes cannot use CUDA (a forked worker fails on first use)."""
    calls = loaders(analysis).dataset_calls(info)
    for call in calls:
        if not (isinstance(call.func, cst.Name) and call.func.value in analysis.index.classes):
            continue
        for cls in _class_chain(analysis, call.func.value, 0):
            method = cls.methods.get("__getitem__") or cls.methods.get("__getitems__")
            if method is None:
                continue
            returned = analysis.index.returns.get(method, [])
            if any(_device_valued(analysis, r) for r in returned):
                return True
            break  # the nearest `__getitem__` is the one that runs
    return False


def _device_valued(analysis, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Tuple, cst.List)):
        return any(_device_valued(analysis, el.value) for el in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(isinstance(el, cst.DictElement) and _device_valued(analysis, el.value) for el in expr.elements)
    return analysis.kind(expr) in (Kind.DEVICE, Kind.CONTAINER)


# -- TSL301: asynchronous copies ---------------------------------------------------------------------
def _dotted(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    """`self.buf[i]` -> ("self", "buf"): the object a subscript or method reaches."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
        while isinstance(expr, cst.Subscript):
            expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    return (expr.value, *reversed(parts))


def _region(index, node: cst.CSTNode) -> cst.CSTNode:
    """The innermost loop around ``node`` in its function, else the function (or module)."""
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef, cst.Module)):
            return anc
    raise AssertionError("node outside the module")


def written_in_place(analysis, copy: cst.Call) -> bool:
    """The copy's source is written in place where an asynchronous copy may still be reading
    it: later in the same loop iteration (or call), or anywhere in the loop when the source is a
    buffer that outlives the iteration (bound outside the loop, a parameter, `self.buf`), whose
    next write can land before the copy has finished. A write after the name was rebound
    (`x = x.to(device); x /= 255`) is a write to the new tensor, not to the source."""
    source = _dotted(copy.func.value)  # type: ignore[union-attr]
    if source is None:
        return False
    index = analysis.index
    region = _region(index, copy)
    defs = index.defs.get(index.scope_of(copy), {}).get(source[0], [])
    fresh = bool(defs) and len(source) == 1 and all((d.stmt is region and d.how == "for") or index.inside(d.stmt, region) for d in defs)
    writes = _in_place_writes(analysis, region, source)
    if writes and not fresh:
        return True
    at = _start(index, copy)
    rebinds = [index.positions[d.stmt].end for d in defs if d.stmt is not region and d.how in ("assign", "unpack", "for") and d.stmt in index.positions]
    for node in writes:
        write = _start(index, node)
        if write > at and not any(at <= (end.line, end.column) <= write for end in rebinds):
            return True
    return False


def _start(index, node: cst.CSTNode) -> tuple[int, int]:
    pos = index.positions[node].start
    return pos.line, pos.column


def _in_place_writes(analysis, region: cst.CSTNode, source: tuple[str, ...]) -> list[cst.CSTNode]:
    """`buf.copy_(...)`, `buf[...] = v`, `buf += v`, `f(..., out=buf)` of one object, in
    ``region`` (read off the module's walk: no second traversal of the tree)."""
    def ours(expr: cst.BaseExpression) -> bool:
        path = _dotted(expr)
        return path is not None and path[: len(source)] == source

    writes: list[cst.CSTNode] = []
    for node in analysis.tree.subtree(region):
        node_type = type(node)
        if node_type is cst.Call:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.endswith("__") and ours(func.value):
                writes.append(node)
            if any(a.keyword is not None and a.keyword.value == "out" and ours(a.value) for a in node.args):
                writes.append(node)
        elif node_type is cst.AssignTarget:
            if isinstance(node.target, (cst.Subscript, cst.Attribute)) and ours(node.target):
                writes.append(node)
        elif node_type is cst.AugAssign and ours(node.target):
            writes.append(node)
    return writes


_STREAM_APIS = frozenset(
    {
        "torch.cuda.stream", "torch.cuda.Stream", "torch.cuda.StreamContext", "torch.cuda.set_stream",
        "torch.cuda.streams.Stream", "torch.Stream", "torch.accelerator.set_stream", "torch.xpu.stream", "torch.xpu.Stream",
    }
)


def uses_streams(analysis) -> bool:
    """The module works with CUDA streams of its own: a copy made asynchronous on the current
    stream may then be read by a kernel on another one before it lands (a blocking copy was
    complete before the host went on)."""
    def compute(a) -> bool:
        return any((a.qualname(call.func) or "") in _STREAM_APIS for call in a.index.calls)

    return analysis.extension("fix-guards:streams", compute)


def custom_batch(analysis, receiver: cst.BaseExpression) -> bool:
    """``receiver`` is the whole element a loop takes from a loader built with a `collate_fn`
    (a user batch class, a tokenizer's `BatchEncoding`...), not a tensor inside it."""
    if not isinstance(receiver, cst.Name):
        return False
    tracker = loaders(analysis)
    for d in analysis.values.reaching_defs(receiver):
        if d.how != "for" or d.value is None:
            continue
        iterable, path = d.value, tuple(d.path or ())
        while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value in ITER_WRAPPERS:
            positional = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if iterable.func.value == "enumerate" and path[:1] == (1,) and positional:
                iterable, path = positional[0], path[1:]
            elif iterable.func.value in ("tqdm", "iter", "track") and positional:
                iterable = positional[0]
            else:
                break
        if path:
            continue
        for info in tracker.loaders_of(iterable):
            collate = next((a.value for a in info.call.args if a.keyword is not None and a.keyword.value == "collate_fn"), None)
            if collate is not None and literal_value(collate) != (True, None):
                return True
            positional = [a.value for a in info.call.args if a.keyword is None and not a.star]
            if (len(positional) > 6 and literal_value(positional[6]) != (True, None)) or any(a.star for a in info.call.args):
                return True  # a positional (`DataLoader(ds, 8, True, None, None, 0, pad)`) or `**kwargs` collate_fn
    return False


# -- names an added import binds ---------------------------------------------------------------------
def shadowed(analysis, node: cst.CSTNode, name: str) -> bool:
    """``name`` is bound, other than by `import name`, in a scope that encloses ``node``
    (a parameter, an assignment, a loop target): an added `import name` would not reach it."""
    index = analysis.index
    scope = index.scope_of(node)
    while True:
        for d in index.defs.get(scope, {}).get(name, ()):
            stmt = d.stmt
            if not (isinstance(stmt, cst.Import) and any(_imports_itself(alias, name) for alias in stmt.names)):
                return True
        if isinstance(scope, cst.Module):
            return False
        scope = index.scope_of(scope)


def _imports_itself(alias: cst.ImportAlias, name: str) -> bool:
    """`import os`, `import os.path`, `import os as os`."""
    dotted = alias.name
    while isinstance(dotted, cst.Attribute):
        dotted = dotted.value
    if not (isinstance(dotted, cst.Name) and dotted.value == name):
        return False
    if alias.asname is None:
        return True
    return isinstance(alias.asname.name, cst.Name) and alias.asname.name.value == name and isinstance(alias.name, cst.Name)
