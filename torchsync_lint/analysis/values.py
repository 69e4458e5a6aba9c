"""What an expression holds: a device tensor, a host value, a model, a loader, an optimizer.

The question every TSL1xx rule asks is "is this plausibly a torch tensor on an accelerator?".
We answer it from the code, never from names: values of torch factories with a device,
`.to(device)`/`.cuda()`, model and criterion calls, tensor methods of such values, through
assignments, unpacking, augmented assignment and same-module calls. Anything we cannot place
is UNKNOWN, and UNKNOWN never produces a finding.
"""

from __future__ import annotations

import enum
import re

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import Def, ModuleIndex


class Kind(str, enum.Enum):
    DEVICE = "device"  # plausibly a tensor (or a container of tensors) on an accelerator
    HOST_TENSOR = "host-tensor"  # a torch tensor that provably lives on the CPU
    HOST = "host"  # a Python value, numpy value, string, device object...: never a device tensor
    MODEL = "model"  # a torch.nn.Module
    LOADER = "loader"  # a torch.utils.data.DataLoader
    OPTIMIZER = "optimizer"  # a torch.optim.Optimizer (or an AMP GradScaler)
    UNKNOWN = "unknown"


HOST_KINDS = frozenset({Kind.HOST, Kind.HOST_TENSOR})
# Parameters resolved inside one another (a call chain forwarding a value) before giving up:
# each level costs about ten Python frames, and the default stack holds 1,000.
MAX_PARAM_DEPTH = 40


def join(kinds) -> Kind:
    """Combine the kinds a name may hold: "may be on the device" wins (ignores None = no info)."""
    seen = {k for k in kinds if k is not None}
    if not seen:
        return Kind.UNKNOWN
    if Kind.DEVICE in seen:
        return Kind.DEVICE
    if len(seen) == 1:
        return seen.pop()
    if seen <= HOST_KINDS:
        return Kind.HOST_TENSOR
    return Kind.UNKNOWN


# Tensor methods whose result is a host value (the read itself is what TSL101 flags).
HOST_RESULT_METHODS = frozenset(
    "item tolist numpy cpu size dim numel nelement element_size is_contiguous data_ptr "
    "get_device stride storage_offset is_floating_point is_complex is_pinned is_shared "
    "__len__ __repr__ __str__ __format__ dim_order".split()
)
HOST_ATTRIBUTES = frozenset("shape dtype device ndim is_cuda requires_grad is_leaf layout names itemsize nbytes".split())
SAME_VALUE_ATTRIBUTES = frozenset("T mT H mH data grad real imag".split())
MODEL_METHODS_RETURNING_MODEL = frozenset("to cuda cpu train eval half float double bfloat16 requires_grad_ share_memory".split())
# A model's tensors live where the model does (the same assumption as its forward's output):
# `model.parameters()` is a container of device tensors; `named_parameters()` yields
# (host name, device tensor) pairs, so only its second element is a device tensor.
MODEL_TENSOR_ITERATORS = frozenset({"parameters", "buffers"})
MODEL_NAMED_TENSOR_ITERATORS = frozenset({"named_parameters", "named_buffers"})

# Builtins and modules whose results are host values whatever they are given.
HOST_BUILTINS = frozenset(
    "len int float bool str repr format isinstance issubclass type range id hash print "
    "open round chr ord hex oct bin callable hasattr getattr setattr dir vars input".split()
)
SAME_KIND_BUILTINS = frozenset("abs min max sum sorted reversed list tuple iter next".split())
HOST_MODULE_PREFIXES = ("numpy.", "math.", "random.", "time.", "os.", "sys.", "json.", "pandas.", "statistics.", "np.")

TORCH_FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "as_tensor asarray zeros_like ones_like empty_like full_like rand_like randn_like "
    "randint_like from_numpy frombuffer scalar_tensor empty_strided normal".split()
)
TORCH_HOST_RESULTS = frozenset(
    "is_tensor is_floating_point numel manual_seed seed initial_seed set_grad_enabled "
    "is_grad_enabled get_default_dtype no_grad enable_grad inference_mode autocast device "
    "set_default_dtype save load compile".split()
)
ACCELERATOR_WORDS = re.compile(r"cuda|mps|xla|xpu|hpu|npu|meta|gpu|accelerat", re.I)
CPU_WORDS = re.compile(r"^cpu(:\d+)?$")

# A module that never mentions an accelerator keeps every tensor on the CPU.
_ACCELERATOR_SOURCE = re.compile(r"cuda|device|accelerat|\bxla\b|\bmps\b|lightning|Lightning|Fabric|\.to\(")
# Words that name an accelerator (or a framework that picks one): a module that says one of
# them may run on it, whatever its `device` variables hold.
_ACCELERATOR_NAMES = re.compile(r"cuda|accelerat|\bxla\b|\bmps\b|\bxpu\b|\bnpu\b|\bhpu\b|lightning|Lightning|Fabric")


def source_uses_accelerator(source: str) -> bool:
    return bool(_ACCELERATOR_SOURCE.search(source))


def source_names_accelerator(source: str) -> bool:
    return bool(_ACCELERATOR_NAMES.search(source))


class ValueAnalysis:
    """Lazily evaluates and memoises the Kind of expressions in one module."""

    def __init__(self, index: ModuleIndex, mentions_device: bool, names_accelerator: bool | None = None) -> None:
        """``mentions_device``: the source mentions a device at all (source_uses_accelerator);
        ``names_accelerator``: it names an accelerator (source_names_accelerator); None when
        unknown, which counts as yes."""
        self.index = index
        self._mentions_device = mentions_device
        self._names_accelerator = mentions_device if names_accelerator is None else names_accelerator
        self._uses_accelerator: bool | None = None
        self._memo: dict[int, Kind | None] = {}
        self._in_progress: set[int] = set()
        self._param_memo: dict[int, Kind] = {}
        self._param_depth = 0  # parameters being resolved inside one another
        self._param_cuts = 0  # times MAX_PARAM_DEPTH cut a resolution short

    # -- public ---------------------------------------------------------------------------
    @property
    def uses_accelerator(self) -> bool:
        """May this module's tensors be on an accelerator?

        No when the source never mentions a device, and no when its only device words are
        `device`/`.to(` and every device it passes is the CPU (`device = "cpu"`, then
        `.to(device)`): the user configured the CPU. A device the code cannot resolve (a
        parameter, `args.device`, `x.device`) counts as an accelerator.
        """
        if self._uses_accelerator is None:
            self._uses_accelerator = self._mentions_device and (self._names_accelerator or self._passes_a_non_cpu_device())
        return self._uses_accelerator

    def _passes_a_non_cpu_device(self) -> bool:
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
                return True
            devices = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"]
            is_move = isinstance(func, cst.Attribute) and func.attr.value == "to"
            if is_move or (self.qualname(func) or "") == "torch.device":
                devices += [a.value for a in call.args[:1] if a.keyword is None and not a.star]
            if any(self._device_arg(d, resolve_tensors=False) == "accelerator" for d in devices):
                return True
        return False

    def kind(self, node: cst.BaseExpression) -> Kind:
        k = self._eval(node)
        return k if k is not None else Kind.UNKNOWN

    def is_device(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) is Kind.DEVICE

    def qualname(self, node: cst.BaseExpression) -> str | None:
        return self.index.imports.qualname(node)

    def origin_qualname(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of the call that created ``expr``, directly or through local
        names whose every reaching assignment agrees (`s = torch.cuda.Stream()`; `s`)."""
        if isinstance(expr, cst.Call):
            return self.qualname(expr.func)
        if isinstance(expr, cst.Name):
            origins = {self.origin_qualname(d.value) for d in self.reaching_defs(expr) if d.how == "assign" and d.value is not None}
            return origins.pop() if len(origins) == 1 else None
        return None

    def device_of(self, node: cst.BaseExpression) -> str | None:
        """For a device argument: "cpu", "accelerator", or None when it is not a device."""
        return self._device_arg(node)

    # -- evaluation -----------------------------------------------------------------------
    def _eval(self, node: cst.BaseExpression) -> Kind | None:
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if key in self._in_progress:
            return None  # a cycle (x = x + y): contributes nothing
        self._in_progress.add(key)
        cuts = self._param_cuts
        try:
            result = self._compute(node)
        finally:
            self._in_progress.discard(key)
        if result is Kind.DEVICE and not self.uses_accelerator:
            result = Kind.HOST_TENSOR
        if self._param_cuts == cuts:  # not when a too-deep parameter chain was cut short below
            self._memo[key] = result
        return result

    def _compute(self, node: cst.BaseExpression) -> Kind | None:
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return Kind.HOST
        if isinstance(node, cst.Name):
            if node.value in ("None", "True", "False"):
                return Kind.HOST
            return self._name(node)
        if isinstance(node, cst.Attribute):
            return self._attribute(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.Subscript):
            base = self._eval(node.value)
            return base if base in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR) else Kind.UNKNOWN
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
                return Kind.HOST  # "%s" % t: string formatting
            return self._combine(self._eval(node.left), self._eval(node.right))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return Kind.HOST
            return self._eval(node.expression)
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return Kind.HOST
            return self._combine(self._eval(node.left), *(self._eval(c.comparator) for c in node.comparisons))
        if isinstance(node, cst.BooleanOperation):
            return join([self._eval(node.left), self._eval(node.right)])
        if isinstance(node, cst.IfExp):
            return join([self._eval(node.body), self._eval(node.orelse)])
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            kinds = [self._eval(el.value) for el in node.elements]
            if any(k is Kind.DEVICE for k in kinds):
                return Kind.DEVICE
            return Kind.HOST if all(k in HOST_KINDS for k in kinds) else Kind.UNKNOWN
        if isinstance(node, cst.Dict):
            kinds = [self._eval(el.value) for el in node.elements if isinstance(el, cst.DictElement)]
            return Kind.DEVICE if Kind.DEVICE in kinds else Kind.UNKNOWN
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return Kind.DEVICE if self._eval(node.elt) is Kind.DEVICE else Kind.UNKNOWN
        if isinstance(node, cst.DictComp):
            return Kind.DEVICE if self._eval(node.value) is Kind.DEVICE else Kind.UNKNOWN
        if isinstance(node, cst.NamedExpr):
            return self._eval(node.value)
        return Kind.UNKNOWN

    @staticmethod
    def _combine(*kinds: Kind | None) -> Kind | None:
        """Arithmetic: a device operand makes a device result; all-host stays host."""
        known = [k for k in kinds if k is not None]
        if Kind.DEVICE in known:
            return Kind.DEVICE
        if known and all(k in HOST_KINDS for k in known):
            return Kind.HOST_TENSOR if Kind.HOST_TENSOR in known else Kind.HOST
        return Kind.UNKNOWN if known else None

    # -- names ----------------------------------------------------------------------------
    def reaching_defs(self, name: cst.Name) -> list[Def]:
        """Bindings of ``name`` that may reach this use.

        Straight-line code is flow-sensitive: the last binding that dominates the use (it
        sits in a block enclosing the use, or is the loop target of an enclosing `for`)
        kills every earlier one, so `loss = loss.item()` makes `loss` a host float from
        there on. Bindings under an `if` do not kill, and bindings later in an enclosing
        loop body reach the use through the next iteration unless a dominating binding
        inside that loop kills them first.
        """
        index = self.index
        use_scope = index.scope_of(name)
        scope = use_scope
        while True:
            defs = index.defs.get(scope, {}).get(name.value, [])
            if defs:
                break
            if isinstance(scope, cst.Module):
                return []
            scope = index.scope_of(scope)
        if scope is not use_scope:
            return list(defs)  # a global or closure read: any binding may have run before the call
        line = index.line(name)
        loops = [a for a in self._ancestors_in_scope(name) if isinstance(a, (cst.For, cst.While))]
        # A use inside the statement that binds the name (`x = f(\n    x)`, the right-hand side
        # of a multi-line assignment) reads the *previous* binding, whatever the line numbers say.
        own = [d for d in defs if d.how in ("assign", "unpack", "aug") and self.index.inside(name, d.stmt)]
        before = [d for d in defs if d not in own and (d.line < line or (d.line == line and not self.index.inside(name, d.stmt)))]
        dominating = [d for d in before if self._dominates(d, name)]
        killer = max(dominating, key=lambda d: (d.line, self.index.positions[d.stmt].start.column)) if dominating else None
        if killer is not None:
            before = [killer] + [d for d in before if d.line > killer.line]
        later = [d for d in defs if d not in before and (killer is None or d.line > killer.line or d.line > line)]
        carried = [
            d for d in later if (d.line > line or d in own) and any(self.index.inside(d.stmt, lp) and (killer is None or not (killer.stmt is lp or self.index.inside(killer.stmt, lp))) for lp in loops)
        ]
        return before + carried

    def _ancestors_in_scope(self, node: cst.CSTNode):
        for anc in self.index.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.Module)):
                return
            yield anc

    def _dominates(self, d: Def, use: cst.CSTNode) -> bool:
        """Does binding ``d`` run on every path to ``use`` (within one scope)?"""
        if d.how == "param":
            return True
        if d.how == "for":
            return isinstance(d.stmt, cst.For) and self.index.inside(use, d.stmt.body)
        if not isinstance(d.stmt, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr)):
            return False
        line_node = self.index.parent(d.stmt)
        block = self.index.parent(line_node) if line_node is not None else None
        return block is not None and self.index.inside(use, block)

    def _name(self, node: cst.Name) -> Kind | None:
        defs = self.reaching_defs(node)
        if not defs:
            return Kind.UNKNOWN
        kinds = [self._def(d) for d in defs]
        return join(kinds) if any(k is not None for k in kinds) else None

    def _def(self, d: Def) -> Kind | None:
        if d.how == "assign":
            return self._eval(d.value)
        if d.how == "unpack":
            return self._element(d.value, d.path)
        if d.how == "for":
            return self._iter_element(d.value, d.path)
        if d.how == "aug":
            target = d.stmt.target if isinstance(d.stmt, cst.AugAssign) else None
            return self._combine(self._eval(target) if target is not None else None, self._eval(d.value))
        if d.how == "param":
            return self._param(d)
        if d.how == "module-move":
            return Kind.MODEL
        return Kind.UNKNOWN

    def _element(self, value: cst.BaseExpression, path: tuple[int, ...]) -> Kind | None:
        """Kind of element ``path`` when ``value`` is unpacked."""
        for step in path:
            if isinstance(value, (cst.Tuple, cst.List)) and step >= 0 and step < len(value.elements):
                value = value.elements[step].value
                continue
            k = self._eval(value)
            return k if k in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR) else Kind.UNKNOWN
        return self._eval(value)

    def _iter_element(self, iterable: cst.BaseExpression, path: tuple[int, ...]) -> Kind | None:
        """Kind of (part of) one item produced by ``for ... in iterable``."""
        if isinstance(iterable, cst.Call):
            fname = self._callee_name(iterable)
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if fname in ("enumerate",) and args:
                if not path:
                    return Kind.UNKNOWN
                return Kind.HOST if path[0] == 0 else self._iter_element(args[0], path[1:])
            if fname == "zip" and args:
                if not path:
                    return Kind.UNKNOWN
                return self._iter_element(args[path[0]], path[1:]) if 0 <= path[0] < len(args) else Kind.UNKNOWN
            if fname in ("tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice", "itertools.islice", "track", "rich.progress.track") and args:
                return self._iter_element(args[0], path)
            if fname == "range":
                return Kind.HOST
            method = iterable.func.attr.value if isinstance(iterable.func, cst.Attribute) else None
            if method == "keys" or (method == "items" and path[:1] == (0,)):
                return Kind.HOST  # dict keys: names, not tensors
            if method in MODEL_NAMED_TENSOR_ITERATORS and self._eval(iterable.func.value) is Kind.MODEL:
                if path[:1] == (0,):
                    return Kind.HOST  # the parameter's name
                return Kind.DEVICE if path[:1] == (1,) and len(path) == 1 else Kind.UNKNOWN
        if self._yields_device_batches(iterable):
            return Kind.DEVICE
        k = self._eval(iterable)
        if k is Kind.LOADER:
            return Kind.HOST_TENSOR  # a DataLoader yields CPU tensors until the loop moves them
        if k in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR):
            return k
        return Kind.UNKNOWN

    def _yields_device_batches(self, iterable: cst.BaseExpression) -> bool:
        """A loader handed to `accelerator.prepare(...)` / `fabric.setup_dataloaders(...)`, which
        move each batch to the device. A prepared object that a loop iterates is a data loader:
        models, optimizers and schedulers are not iterated."""
        if isinstance(iterable, cst.Name):
            defs = self.reaching_defs(iterable)
            return bool(defs) and all(d.how in ("assign", "unpack") and isinstance(d.value, cst.Call) and self._moves_batches(d.value) for d in defs)
        return isinstance(iterable, cst.Call) and self._moves_batches(iterable)

    def _moves_batches(self, call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute) or (self.origin_qualname(func.value), func.attr.value) not in DEVICE_BATCH_WRAPPERS:
            return False
        stays = any(a.keyword is not None and a.keyword.value == "move_to_device" and isinstance(a.value, cst.Name) and a.value.value == "False" for a in call.args)
        return not stays  # `fabric.setup_dataloaders(loader, move_to_device=False)`

    def _param(self, d: Def) -> Kind | None:
        """A parameter is what its same-module call sites pass, or what its hook contract says."""
        key = id(d.param)
        if key in self._param_memo:
            return self._param_memo[key]
        if self._param_depth >= MAX_PARAM_DEPTH:
            # A chain of calls this long (f0(x) -> f1(x) -> ... each forwarding x) would exhaust
            # Python's stack; give up on this parameter instead. Nothing computed on top of the
            # cut is memoised, so the same parameter asked for from nearer the chain's start
            # still gets its real answer.
            self._param_cuts += 1
            return Kind.UNKNOWN
        self._param_memo[key] = Kind.UNKNOWN  # cycle guard for recursive functions
        self._param_depth += 1
        cuts = self._param_cuts
        try:
            result = self._param_uncached(d)
        finally:
            self._param_depth -= 1
        if self._param_cuts == cuts:
            self._param_memo[key] = result
        else:
            del self._param_memo[key]
        return result

    def _param_uncached(self, d: Def) -> Kind:
        func, param = d.func, d.param
        assert func is not None and param is not None
        if param.annotation is not None:
            qn = self.qualname(param.annotation.annotation) or ""
            if qn in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                return Kind.DEVICE
            if qn == "torch.nn.Module":
                return Kind.MODEL
        info = self.index.class_of_method.get(func)
        params = [*func.params.posonly_params, *func.params.params]
        if info is not None and params and params[0] is param and self.is_module_class(info.node):
            return Kind.MODEL  # `self` of an nn.Module: `self(x)` is a forward
        if info is not None and func.name.value in LIGHTNING_BATCH_HOOKS and self.is_lightning_class(info.node):
            # Lightning moves the batch to the module's device before calling the hook.
            if param.name.value == "batch":
                return Kind.DEVICE
        names = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        position = names.index(param.name.value) if param.name.value in names else None
        if info is not None and position is not None:
            position -= 1  # `self`
        kinds: list[Kind | None] = []
        for call in self.index.call_sites(func):
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if any(a.star for a in call.args):
                return Kind.UNKNOWN
            match = [a.value for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
            if not match and position is not None and 0 <= position < len(positional):
                match = [positional[position].value]
            if match:
                kinds.append(self._eval(match[0]))
            elif param.default is not None:
                kinds.append(self._eval(param.default))
        return join(kinds) if kinds else Kind.UNKNOWN

    # -- attributes -----------------------------------------------------------------------
    def _attribute(self, node: cst.Attribute) -> Kind | None:
        attr = node.attr.value
        qn = self.qualname(node)
        if qn is not None:
            return self._qualified_value(qn)
        parts = dotted_parts(node)
        if parts and len(parts) == 2 and parts[0] == "self":
            return self._self_attr(node, parts[1])
        if attr in HOST_ATTRIBUTES:
            return Kind.HOST
        base = self._eval(node.value)
        if attr in SAME_VALUE_ATTRIBUTES:
            return base
        if base is Kind.DEVICE:
            return Kind.DEVICE  # fields of a model output (`out.logits`, `out.loss`)
        if base in HOST_KINDS:
            return base
        if base is Kind.MODEL:
            return Kind.UNKNOWN  # a submodule or a parameter
        return Kind.UNKNOWN

    def _qualified_value(self, qn: str) -> Kind:
        if qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in ("float32", "float16", "bfloat16", "int64", "long", "float", "half", "uint8", "bool"):
            return Kind.HOST
        return Kind.UNKNOWN

    def _self_attr(self, node: cst.CSTNode, attr: str) -> Kind | None:
        info = self.index.class_of(node)
        if info is None:
            return Kind.UNKNOWN
        if attr in ("device",):
            return Kind.HOST
        return join([self._def(d) for d in info.self_attrs.get(attr, [])])

    # -- calls ----------------------------------------------------------------------------
    def _callee_name(self, call: cst.Call) -> str | None:
        qn = self.qualname(call.func)
        if qn is not None:
            return qn
        parts = dotted_parts(call.func)
        return ".".join(parts) if parts else None

    def _call(self, call: cst.Call) -> Kind | None:
        func = call.func
        qn = self.qualname(func)
        if qn is not None:
            return self._qualified_call(qn, call)
        if isinstance(func, cst.Name):
            name = func.value
            if name in HOST_BUILTINS and not self.index.defs.get(self.index.scope_of(func), {}).get(name):
                return Kind.HOST
            if name in SAME_KIND_BUILTINS:
                return self._combine(*(self._eval(a.value) for a in call.args)) if call.args else Kind.UNKNOWN
            cls = self.index.classes.get(name)
            if cls is not None and not self._shadowed(func):
                return self._class_instance(cls.node)
            target = self.index.target_of(call)
            if target is not None:
                return self._function_result(target)
        if isinstance(func, cst.Attribute):
            method = self.index.target_of(call)
            if method is not None:
                return self._function_result(method)
            parts = dotted_parts(func)
            if parts and len(parts) == 2 and parts[0] == "self":
                attr = self._self_attr(func, parts[1])
                if attr in (Kind.MODEL, Kind.DEVICE):
                    return self._call_of(attr, call)  # `self.model(x)`: a submodule's forward
            return self._method_call(call, func)
        callee = self._eval(func)
        return self._call_of(callee, call)

    def _call_of(self, callee: Kind | None, call: cst.Call) -> Kind:
        """Calling a model, or an unknown callable (a criterion, a metric) on device tensors."""
        args = [self._eval(a.value) for a in call.args]
        if callee is Kind.MODEL:
            return Kind.DEVICE if Kind.DEVICE in args or self.uses_accelerator else Kind.HOST_TENSOR
        if callee in (None, Kind.UNKNOWN) and Kind.DEVICE in args:
            return Kind.DEVICE
        if callee is Kind.DEVICE:
            return Kind.DEVICE
        return Kind.UNKNOWN

    def _shadowed(self, name: cst.Name) -> bool:
        """A local binding hides the module-level class of the same name."""
        return any(d.how != "opaque" for d in self.reaching_defs(name))

    def _function_result(self, func: cst.FunctionDef) -> Kind | None:
        returns = self.index.returns.get(func, [])
        if not returns:
            return Kind.HOST  # returns None
        kinds = [self._eval(r) for r in returns]
        return join(kinds) if any(k is not None for k in kinds) else None

    def _class_instance(self, cls: cst.ClassDef) -> Kind:
        return Kind.MODEL if self.is_module_class(cls) else Kind.UNKNOWN

    def is_module_class(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, lambda qn: qn.startswith("torch.nn.") or qn in LIGHTNING_MODULES)

    def is_lightning_class(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, lambda qn: qn in LIGHTNING_MODULES)

    def _derives_from(self, cls: cst.ClassDef, is_base, depth: int = 0) -> bool:
        """Does ``cls`` have an imported base (by qualified name) that ``is_base`` accepts,
        directly or through local base classes (at most 5 deep)?"""
        for base in cls.bases:
            if is_base(self.qualname(base.value) or ""):
                return True
            if isinstance(base.value, cst.Name) and depth < 5:
                local = self.index.classes.get(base.value.value)
                if local is not None and self._derives_from(local.node, is_base, depth + 1):
                    return True
        return False

    def _qualified_call(self, qn: str, call: cst.Call) -> Kind:
        last = qn.rsplit(".", 1)[-1]
        if qn.startswith(HOST_MODULE_PREFIXES):
            return Kind.HOST
        if qn == "torch.utils.data.DataLoader":
            return Kind.LOADER
        if qn.startswith(("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")):
            return Kind.UNKNOWN  # a scheduler steps per epoch; it is not an optimizer
        if qn.startswith("torch.optim.") and last[:1].isupper() or qn.endswith("GradScaler"):
            return Kind.OPTIMIZER
        if qn in ("torch.compile", "torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel", "torch.jit.script"):
            return Kind.MODEL if call.args and self._eval(call.args[0].value) in (Kind.MODEL, Kind.UNKNOWN) else Kind.UNKNOWN
        if qn.startswith("torch.nn.") and last[:1].isupper() and not qn.startswith("torch.nn.functional."):
            return Kind.MODEL
        if qn.startswith("torchmetrics.") and last[:1].isupper():
            return Kind.MODEL  # a metric is an nn.Module: `metric.to(device)` is not a device tensor
        if qn in ("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.get_total_norm"):
            return Kind.DEVICE  # the total norm, a tensor on the parameters' device
        if qn.startswith("torch.cuda.") or qn.startswith("torch.distributed.") or qn.startswith("torch.backends."):
            return Kind.HOST
        if qn.startswith("torch.") and last.startswith(("is_", "has_", "get_", "are_")):
            return Kind.HOST  # predicates and getters (`is_traceable_wrapper_subclass(t)`) return Python values
        if qn.startswith("torch.") and qn.count(".") == 1:
            if last in TORCH_HOST_RESULTS:
                return Kind.HOST
            if last in TORCH_FACTORIES:
                return self._factory(last, call)
        if qn.startswith("torch.") or qn.startswith("torch.nn.functional."):
            args = [self._eval(a.value) for a in call.args]
            if Kind.DEVICE in args:
                return Kind.DEVICE
            if args and all(a in HOST_KINDS for a in args):
                return Kind.HOST_TENSOR
            return Kind.UNKNOWN
        # A class or function imported from elsewhere: a model if it is a known module base,
        # else an opaque callable that gives device results from device inputs.
        if qn in LIGHTNING_MODULES:
            return Kind.MODEL
        return self._call_of(Kind.UNKNOWN, call)

    def _factory(self, last: str, call: cst.Call) -> Kind:
        device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
        if device is not None:
            where = self._device_arg(device)
            return Kind.HOST_TENSOR if where == "cpu" else Kind.DEVICE
        if last.endswith("_like") or last in ("as_tensor", "asarray"):
            if call.args:
                k = self._eval(call.args[0].value)
                if k is Kind.DEVICE:
                    return Kind.DEVICE
        return Kind.HOST_TENSOR  # created on the CPU

    def _device_arg(self, node: cst.BaseExpression, resolve_tensors: bool = True) -> str | None:
        """"cpu" / "accelerator" for a device-like argument; None when it is not one (a dtype).

        ``resolve_tensors=False`` answers without evaluating any expression's kind (for
        ``uses_accelerator``, which kinds depend on): `t.device` is then an accelerator."""
        if isinstance(node, cst.SimpleString):
            text = node.evaluated_value if isinstance(node.evaluated_value, str) else ""
            if CPU_WORDS.match(text):
                return "cpu"
            return "accelerator" if ACCELERATOR_WORDS.search(text) else None
        if isinstance(node, cst.Integer):
            return "accelerator"  # `.to(0)` / `.cuda(0)`
        qn = self.qualname(node) or ""
        if qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "long", "float", "half", "double", "uint8", "bool", "int8", "int16", "complex64"):
            return None
        if isinstance(node, cst.Call):
            cq = self.qualname(node.func) or ""
            if cq == "torch.device" and node.args:
                return self._device_arg(node.args[0].value, resolve_tensors)
            return "accelerator"
        if isinstance(node, cst.IfExp):
            sides = {self._device_arg(node.body, resolve_tensors), self._device_arg(node.orelse, resolve_tensors)}
            return "accelerator" if "accelerator" in sides else ("cpu" if sides == {"cpu"} else None)
        if isinstance(node, cst.Name):
            if "dtype" in node.value.lower():
                return None
            defs = self.reaching_defs(node)
            values = [d.value for d in defs if d.how == "assign" and d.value is not None]
            if values and len(values) == len(defs):
                kinds = {self._device_arg(v, resolve_tensors) for v in values}
                if kinds == {"cpu"}:
                    return "cpu"
                if kinds == {None}:
                    return None
            return "accelerator"
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("dtype",) or "dtype" in node.attr.value:
                return None
            if node.attr.value == "device":
                if not resolve_tensors:
                    return "accelerator"
                base = self._eval(node.value)
                return "cpu" if base is Kind.HOST_TENSOR else "accelerator"
            return "accelerator"
        return None

    def _method_call(self, call: cst.Call, func: cst.Attribute) -> Kind | None:
        method = func.attr.value
        receiver = self._eval(func.value)
        if method in ("to", "cuda", "cpu", "pin_memory"):
            if receiver is Kind.MODEL:
                return Kind.MODEL
            if method == "cuda":
                return Kind.DEVICE
            if method in ("cpu", "pin_memory"):
                return Kind.HOST_TENSOR
            where = self.to_destination(call)
            if where == "accelerator":
                return Kind.DEVICE
            if where == "cpu":
                return Kind.HOST_TENSOR
            return receiver  # `.to(torch.float16)` keeps the device
        if receiver is Kind.MODEL:
            if method in MODEL_METHODS_RETURNING_MODEL:
                return Kind.MODEL
            if method in MODEL_TENSOR_ITERATORS:
                return Kind.DEVICE
            if method == "forward":
                return Kind.DEVICE if self.uses_accelerator else Kind.HOST_TENSOR
            return Kind.UNKNOWN
        if receiver is Kind.DEVICE:
            if method in HOST_RESULT_METHODS:
                return Kind.HOST
            return Kind.DEVICE
        if receiver is Kind.HOST_TENSOR:
            return Kind.HOST if method in HOST_RESULT_METHODS else Kind.HOST_TENSOR
        if receiver is Kind.HOST:
            return Kind.HOST
        if method in ("item", "tolist", "numpy", "__len__"):
            return Kind.HOST
        if method in ("detach", "clone", "contiguous", "float", "half", "long", "mean", "sum"):
            return receiver
        return Kind.UNKNOWN

    def to_destination(self, call: cst.Call) -> str | None:
        """Where `x.to(...)` sends its receiver: "accelerator", "cpu", or None (dtype only)."""
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value == "device":
                    return self._device_arg(arg.value)
                continue
            where = self._device_arg(arg.value)
            if where is not None:
                return where
            if isinstance(arg.value, (cst.Name, cst.Attribute)) and self._eval(arg.value) is Kind.DEVICE:
                return "accelerator"  # `.to(other_tensor)`
            break  # only the first positional can be a device
        return None


LIGHTNING_MODULES = frozenset({"lightning.LightningModule", "lightning.fabric.LightningModule"})
LIGHTNING_BATCH_HOOKS = frozenset(
    "training_step validation_step test_step predict_step on_train_batch_start on_train_batch_end "
    "on_validation_batch_start on_validation_batch_end on_test_batch_end on_predict_batch_end".split()
)
# (maker, method): the loaders it returns yield batches already on the device (accelerate 1.15
# `prepare`/`prepare_data_loader` with the default device_placement; Fabric `setup_dataloaders`
# with the default move_to_device=True). Library knowledge for knowledge/accelerate.py and
# knowledge/lightning.py when those tables exist.
DEVICE_BATCH_WRAPPERS = frozenset(
    {(maker, "setup_dataloaders") for maker in ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric")}
    | {("accelerate.Accelerator", "prepare"), ("accelerate.Accelerator", "prepare_data_loader")}
)
