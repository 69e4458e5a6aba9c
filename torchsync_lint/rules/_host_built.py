"""Tensors built on the host in the step: what TSL305 reports and TSL301 leaves to it.

One hazard, one finding: a tensor made on the CPU in the step and then copied to the device
(`torch.tensor(0).float().cuda()`, `targets = torch.ones(s) * -1; targets = targets.cuda()`,
`norm = torch.Tensor([[0.1, 0.2]]); norm.cuda()`) is TSL305's (build it on the device, or
once); TSL301 (a blocking copy) is about data: a batch, or an array the step is handed
(`torch.from_numpy(obs).to(device)`, `img = torch.Tensor(image); img.cuda()`).
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind
from torchsync_lint.analysis.kinds import HOST_KINDS
from torchsync_lint.analysis.index import is_none
from torchsync_lint.analysis.loaders import loaders
from torchsync_lint.knowledge import torch as torch_knowledge

LEGACY_CONSTRUCTORS = torch_knowledge.LEGACY_CONSTRUCTORS
FRESH_HOST_TENSOR = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"}) | LEGACY_CONSTRUCTORS
# Built where the default device is (`torch.set_default_device`, `set_default_tensor_type`); the
# typed legacy constructors (`torch.LongTensor`) and `from_numpy` always build on the CPU.
_DEFAULT_PLACED = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.Tensor"})
CPU_FACTORIES = frozenset("zeros ones empty full rand randn randint randperm arange linspace eye normal hann_window hamming_window blackman_window bartlett_window kaiser_window".split())
_DISPLAYS = frozenset({cst.List, cst.Tuple, cst.ListComp, cst.Integer, cst.Float})
# NumPy calls and array methods that view or cast an array: the batch they are given, shaped.
_ARRAY_VIEWS = frozenset({"numpy.transpose", "numpy.asarray", "numpy.ascontiguousarray", "numpy.array", "numpy.stack"})
_ARRAY_VIEW_METHODS = frozenset({"astype", "transpose", "reshape", "copy"})
# How far host_built follows names, operands and helpers (each step one syntactic level).
_MAX_DEPTH = 8
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power)


def keeps_place(method: str) -> bool:
    """A tensor method whose result is the tensor itself, a view or a cast of it, where it is:
    a reshape (`unsqueeze`, `expand_as`, `long`) or an in-place fill (`zero_`, `scatter_`)."""
    return method in torch_knowledge.RESHAPING_METHODS or (method.endswith("_") and not method.startswith("_"))


def stays_in_place(analysis, call: cst.Call) -> bool:
    """A method call whose result is its receiver where it is: a reshape or in-place fill
    (keeps_place), or a cast to a dtype, `.to(dtype)` / `.type(torch.float16)` / `.to(x.dtype)`
    (`torch.tensor(0).to(dtype).cuda()` is built on the host, then copied)."""
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    if keeps_place(method):
        return True
    if method not in ("to", "type") or not call.args or any(a.keyword is not None and a.keyword.value != "dtype" for a in call.args):
        return False
    return all(_is_dtype(analysis, a.value) for a in call.args if not a.star)


def _is_dtype(analysis, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """`torch.float16`, `x.dtype`, or a name every definition of which binds one."""
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "dtype":
            return True
        qn = analysis.qualname(expr) or ""
        return qn.startswith("torch.") and qn.count(".") == 1 and qn.rsplit(".", 1)[1] in torch_knowledge.DTYPE_NAMES
    if isinstance(expr, cst.Name) and depth < 3:
        defs = analysis.values.reaching_defs(expr)
        return bool(defs) and all(d.how == "assign" and d.value is not None and _is_dtype(analysis, d.value, depth + 1) for d in defs)
    return False


def fresh_host_fill(analysis, expr: cst.BaseExpression | None, depth: int = 0) -> str | None:
    """The factory (`zeros`, `randn`...) of a tensor filled on the CPU that ``expr`` is, else
    None: the call itself, reshaped or filled in place there (TorchTidy's "Extra CUDA Copy"),
    or a name every definition of which binds one (`noise = torch.randn(n)`, then
    `noise = noise.cuda()` a line later)."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and stays_in_place(analysis, expr):
        expr = expr.func.value
    if isinstance(expr, cst.Call):
        qn = analysis.qualname(expr.func) or ""
        last = qn.rsplit(".", 1)[-1]
        placed = any(a.keyword is not None and a.keyword.value == "device" for a in expr.args)
        if placed or analysis.values.factories_default_to_accelerator():
            return None  # filled where it is used: a `device=`, or a default device that is not the CPU
        return last if qn.count(".") == 1 and qn.startswith("torch.") and last in CPU_FACTORIES else None
    if isinstance(expr, cst.Name) and depth < 4:
        defs = analysis.values.reaching_defs(expr)
        found = {fresh_host_fill(analysis, d.value, depth + 1) if d.how == "assign" else None for d in defs}
        return found.pop() if len(found) == 1 and None not in found else None
    return None


def host_built(analysis, expr: cst.BaseExpression | None, depth: int = 0, bound: frozenset = frozenset()) -> str | None:
    """What built ``expr`` on the host, when a torch call of this code did: a CPU factory's
    name (`zeros`: it can fill the device instead), "data" for a tensor made from host
    data (`torch.tensor(0)`, `torch.Tensor([[...]])`; named first, only of constants or of
    values gathered in a list), or "cpu" for the host copy of a device value (`t.cpu()`);
    through reshapes and casts, arithmetic and comparisons with host numbers or other such
    tensors (`torch.ones(s) * alpha`, `torch.rand(s) < p`), torch functions and tensor methods
    of such tensors (`torch.stack([gx, gy])`, `F.one_hot(t, n)`, `t.repeat(b, 1)`), what a
    helper of the module returns (``bound``: the helper's parameters given such tensors), and
    names every definition of which binds one (`t *= math.pi` keeps what `t` was)."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and stays_in_place(analysis, expr):
        expr = expr.func.value
    if expr is None or depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Subscript):  # `table[:n]`: a view of the host tensor, where it is
        if any(type(el.slice) is cst.Index and analysis.kind(el.slice.value) is not Kind.HOST for el in expr.slice):
            return None  # `table[idx]` with a tensor of indices (the batch's): a gather of data
        return host_built(analysis, expr.value, depth, bound)
    if isinstance(expr, cst.Call):
        return _built_by_call(analysis, expr, depth, bound)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return _of_built_operands(analysis, [expr.left, expr.right], depth, bound)
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        return _of_built_operands(analysis, [expr.left, expr.comparisons[0].comparator], depth, bound)
    if isinstance(expr, cst.Name):
        found = {_built_binding(analysis, d, depth, bound) for d in analysis.values.reaching_defs(expr)}
        return found.pop() if len(found) == 1 and None not in found else None
    return None


def _built_binding(analysis, d, depth: int, bound: frozenset) -> str | None:
    if d.how == "assign":
        return host_built(analysis, d.value, depth + 1, bound)
    if d.how == "param":
        return "data" if d.param in bound else None
    if d.how == "aug" and isinstance(d.stmt, cst.AugAssign) and analysis.kind(d.value) is Kind.HOST:
        return host_built(analysis, d.stmt.target, depth + 1, bound)  # `t *= math.pi`: what `t` was
    return None


def _built_by_call(analysis, expr: cst.Call, depth: int, bound: frozenset) -> str | None:
    factory = fresh_host_fill(analysis, expr)
    if factory is not None:
        return factory
    qn = analysis.qualname(expr.func) or ""
    if not qn and isinstance(expr.func, cst.Attribute):
        return _method_of_built(analysis, expr, depth, bound) or _helper_built(analysis, expr, depth, bound)
    if not qn.startswith("torch."):
        return _helper_built(analysis, expr, depth, bound)
    if any(a.keyword is not None and a.keyword.value == "device" and analysis.values.device_of(a.value) != "cpu" for a in expr.args):
        return None  # placed where it is used (`device=t.device` of a host tensor `t` stays on the host)
    if qn not in FRESH_HOST_TENSOR:  # `torch.stack([gx, gy])`, `F.one_hot(t, n)`, `torch.where(...)`
        operands = []
        for a in expr.args:
            value = a.value
            operands += [el.value for el in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        return _of_built_operands(analysis, operands, depth, bound)
    positional = [a for a in expr.args if a.keyword is None]
    if qn in _DEFAULT_PLACED and analysis.values.factories_default_to_accelerator():
        return None  # `torch.tensor(...)`, `torch.Tensor(...)` fill the default device, an accelerator here
    if not positional or positional[0].star:
        return None
    data = positional[0].value
    kind = analysis.kind(data)
    if kind is Kind.DEVICE or kind is Kind.MOVED:
        return None  # of a device tensor: on the device already
    if is_batch_item(analysis, data):
        return None  # `torch.LongTensor(labels).to(device)` of the loader's batch: the data itself, cast; its copy is TSL301's, chained or named
    if qn in ("torch.as_tensor", "torch.asarray") and kind not in HOST_KINDS:
        return None  # `as_tensor(x)` of something we cannot place keeps it where it is
    if depth and not (type(data) in _DISPLAYS or kind is Kind.CONTAINER or (qn in LEGACY_CONSTRUCTORS and _is_size(positional))):
        # named, then copied: constants (`norm = torch.Tensor([[0.1, 0.2]])`) or values
        # gathered in the step are built here; an array handed in (an image, an
        # observation) is the data itself, and its copy is TSL301's
        return None
    return "data"


def _method_of_built(analysis, call: cst.Call, depth: int, bound: frozenset) -> str | None:
    """`grid.repeat(b, 1)`, `t.mul(2)` of a tensor built on the host, with host arguments;
    `t.cpu()` of a device tensor: its host copy, made in the step."""
    if not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    if call.func.attr.value == "cpu" and not call.args:
        # (of a tensor we cannot place too: `.cpu()` then a copy back is a round trip of a
        # device value, or of a host one a no-op and a copy of what was built here)
        return "cpu" if analysis.kind(receiver) not in HOST_KINDS else host_built(analysis, receiver, depth + 1, bound)
    built = host_built(analysis, receiver, depth + 1, bound)
    if built is None or call.func.attr.value in torch_knowledge.COPY_METHODS or call.func.attr.value == "pin_memory":
        return None  # (a pinned buffer is a staging area the step fills with data: its copy is TSL301's)
    return built if all(analysis.kind(a.value) is Kind.HOST for a in call.args) else None


def _of_built_operands(analysis, operands: list, depth: int, bound: frozenset) -> str | None:
    """The first operand's builder when at least one operand is built on the host and every
    other is a host number (or another such tensor); None when any may be data or device."""
    built = None
    for operand in operands:
        found = host_built(analysis, operand, depth + 1, bound)
        if found is None and analysis.kind(operand) is not Kind.HOST and not is_none(operand):
            return None
        built = built or found
    return built


def _helper_built(analysis, call: cst.Call, depth: int, bound: frozenset = frozenset()) -> str | None:
    """What a function of this module a call runs builds on the host and returns, every
    `return` alike: `get_sinusoid_encoding_table(n, d)` returning `torch.FloatTensor(table)` of
    an array it computes itself is built in the step that calls it, and so is `sinc(t)` of a
    `t` built here (a tensor made of what the helper is handed from elsewhere,
    `torch.from_numpy(image)`, stays the data itself: TSL301's)."""
    target = analysis.index.resolve_function(call.func, call)
    if target is None or depth > _MAX_DEPTH // 2 or analysis.index.class_of_method.get(target) is not None:
        return None
    returns = [n.value for n in analysis.index.tree.walk_subtree(target.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if type(n) is cst.Return]
    if not returns or any(r is None for r in returns):
        return None
    given = frozenset(
        p for p in (*target.params.posonly_params, *target.params.params, *target.params.kwonly_params)
        if (arg := analysis.index.argument_for(call, target, p)) is not None and arg is not p.default and host_built(analysis, arg, depth + 1, bound) is not None
    )
    found = {host_built(analysis, r, depth + 1, given) or _built_of_own_data(analysis, r, target) for r in returns}
    return found.pop() if len(found) == 1 and None not in found else None


def _built_of_own_data(analysis, expr: cst.BaseExpression, func: cst.FunctionDef) -> str | None:
    """"data" when ``expr`` is a host tensor constructor (`torch.FloatTensor(table)`) of a name
    that only ``func``'s own assignments bind: data the function computed, not data handed in."""
    if not (isinstance(expr, cst.Call) and (analysis.qualname(expr.func) or "") in FRESH_HOST_TENSOR):
        return None
    if any(a.keyword is not None and a.keyword.value == "device" for a in expr.args) or not expr.args or expr.args[0].star:
        return None
    data = expr.args[0].value
    if not isinstance(data, cst.Name) or analysis.kind(data) is not Kind.HOST:
        return None
    defs = analysis.values.reaching_defs(data)
    return "data" if defs and all(d.how == "assign" and analysis.index.enclosing_function(d.stmt) is func for d in defs) else None


def is_batch_item(analysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a name every binding of which is an item of a per-step loop over a loader
    (`for data, label in loader`): data the step is handed, not built in it? Also through the
    NumPy views and casts a batch is put in shape with (`np.transpose(imgs, (0, 3, 1, 2))`,
    `np.asarray(x)`, `x.astype(np.float32)`)."""
    for _ in range(4):
        if type(expr) is cst.Call and expr.args and not expr.args[0].star:
            if (analysis.qualname(expr.func) or "") in _ARRAY_VIEWS:
                expr = expr.args[0].value
                continue
        if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _ARRAY_VIEW_METHODS and analysis.qualname(expr.func) is None:
            expr = expr.func.value
            continue
        break
    if type(expr) is not cst.Name:
        return False
    defs = analysis.values.reaching_defs(expr)
    batches = loaders(analysis)
    return bool(defs) and all(d.how == "for" and batches.is_batch_loop(d.stmt) for d in defs)


def _is_size(positional: list[cst.Arg]) -> bool:
    """`torch.BoolTensor(x.size())`, `torch.FloatTensor(b, n)`: a legacy constructor given a
    size allocates (a fill on the CPU), it copies no data."""
    if len(positional) > 1:
        return True
    return _names_size(positional[0].value)


def _names_size(value: cst.BaseExpression) -> bool:
    """`x.shape`, `x.size()`, and a size extended by a tuple (`x.size() + (n,)`: a torch.Size)."""
    if isinstance(value, cst.Attribute):
        return value.attr.value == "shape"
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _names_size(value.left) or _names_size(value.right)
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size"
