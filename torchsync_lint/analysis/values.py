"""What an expression holds: a device tensor, a container of them, a host value, a model, a
loader, an optimizer (kinds.py: what a value is and where it lives).

The question every TSL1xx rule asks is "is this plausibly a torch tensor on an accelerator?".
We answer it from the code, never from names: values of torch factories with a device,
`.to(device)`/`.cuda()`, model and criterion calls, tensor methods of such values, through
assignments, unpacking (position by position), dict literals (key by key), augmented
assignment, same-module calls and, with a project view, calls and call sites in other modules
(``self.env``). Anything we cannot place is UNKNOWN, and UNKNOWN never produces a finding.

Calls are evaluated in analysis/calls.py, device arguments in analysis/devices.py, elements
(unpacking, subscripts, loop items) in analysis/elements.py and attributes in
analysis/attributes.py, parameters in analysis/params.py and what a class is in
analysis/class_queries.py, what the code's use shows a value to be (a container, a module)
in analysis/shapes.py; this module holds the evaluation loop and names.

Cycles (`x = x + y` in a loop, mutually recursive helpers) are solved to a fixed point at the
node where the cycle was entered, and nothing computed on top of an unfinished node is
memoised, so an answer never depends on which rule asked first.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.bindings import Bindings
from torchsync_lint.analysis.asking import AskingEnv
from torchsync_lint.analysis.attributes import AttributeKinds
from torchsync_lint.analysis.calls import CallKinds
from torchsync_lint.analysis.class_queries import ClassQueries
from torchsync_lint.analysis.devices import DeviceArguments, source_names_accelerator, source_uses_accelerator
from torchsync_lint.analysis.elements import ElementKinds
from torchsync_lint.analysis.env import NULL_ENV, Env
from torchsync_lint.analysis.evidence import Evidence
from torchsync_lint.analysis.shapes import ShapeEvidence, empty_container_call
from torchsync_lint.analysis.instances import InstanceKinds
from torchsync_lint.analysis.params import ParameterKinds
from torchsync_lint.analysis.imports import canonical, dotted_parts
from torchsync_lint.analysis.index import Def, ModuleIndex, is_none, literal_element
from torchsync_lint.analysis.kinds import DEVICE_VALUES, HOST_KINDS, Kind, combine, join
from torchsync_lint.knowledge import lightning
from torchsync_lint.knowledge import torch as torch_knowledge

# Kept importable from here: rules and trackers read them.
HOST_RESULT_METHODS = torch_knowledge.HOST_RESULT_METHODS
LIGHTNING_MODULES = lightning.LIGHTNING_MODULES
LIGHTNING_BATCH_HOOKS = lightning.BATCH_HOOKS
__all__ = ["HOST_KINDS", "HOST_RESULT_METHODS", "Kind", "ValueAnalysis", "combine", "join", "source_names_accelerator", "source_uses_accelerator"]

# Rounds of a cycle's fixed point before settling on what it has (kinds form a short lattice:
# three rounds reach the fixed point in practice).
MAX_ROUNDS = 4


# Exact types (libcst's classes are ABCs: isinstance is slow on the hottest path).
_LITERAL_TYPES = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString})


class ValueAnalysis(CallKinds, DeviceArguments, ElementKinds, AttributeKinds, Evidence, ShapeEvidence, InstanceKinds, ParameterKinds, ClassQueries):
    """Lazily evaluates and memoises the Kind of expressions in one module."""

    def __init__(self, index: ModuleIndex, mentions_device: bool, names_accelerator: bool | None = None, env: Env = NULL_ENV, seed: ValueAnalysis | None = None) -> None:
        """``mentions_device``: the source mentions a device at all (source_uses_accelerator);
        ``names_accelerator``: it names an accelerator (source_names_accelerator); None when
        unknown, which counts as yes. ``env``: what other modules of the project say.
        ``seed``: the same module's analysis without the project: its answers that asked the
        project nothing (and leaned on nothing that did) are this analysis's answers too."""
        self.index = index
        # Every question to the project counts on this counter, so that an answer computed
        # without one is known to hold whatever the project says (see ``_solve``).
        self._asked = [0]
        self.env = AskingEnv(env, self._asked)
        # What follows from the syntax alone (reaching definitions, the scopes a name moves
        # in): the seed's memos are this analysis's too (the same module, the same index).
        self.bindings = seed.bindings if seed is not None else Bindings(index)
        self._mentions_device = mentions_device
        self._names_accelerator = mentions_device if names_accelerator is None else names_accelerator
        self._memo: dict[object, Kind | None] = {}
        self._active: dict[object, int] = {}  # key -> its depth on the evaluation stack
        # Per depth: the in-progress nodes the node at that depth leaned on, with the value
        # each gave it (an approximation of a cycle head, or a provisional answer's own).
        self._leaned: list[dict[object, Kind | None]] = []
        self._provisional: dict[object, tuple] = {}  # key -> (result, {in-progress key: value it gave})
        self._approx: dict[object, Kind | None] = {}  # a cycle head's value in the current round
        self._lowest_cut = _NO_CUT  # the shallowest in-progress node the current frame leaned on
        self._param_depth = 0
        self._placements: dict[tuple[int, str], bool] = seed._placements if seed is not None else {}  # noqa: SLF001
        self._stores: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression]]] | None = None  # _stores_into
        self._shadowed_roots: dict[int, bool] = seed._shadowed_roots if seed is not None else {}  # noqa: SLF001
        # Caches of ``_reused``: (answer, whether computing it asked the project).
        # Keyed by the node's id, not the node (a libcst node's hash is a Python call, and these
        # are asked of nearly every node); each entry holds its node, so no id is reused.
        self._origins: dict[tuple[int, int], tuple] = {}
        self._qualnames: dict[int, tuple] = {}  # every rule asks, per call
        self._module_facts: dict[str, tuple] = {}  # "accelerator" (devices.py), "graph" (evidence.py)
        self._type_tests: set[str] | None = None  # names tested with isinstance/is_tensor (evidence.py)
        self._batch_functions: dict | None = None  # functions an engine runs per batch (class_queries.py)
        self._engine_params_memo: dict = {}  # function -> the parameters it hands an engine (class_queries.py)
        self._operand_helpers: dict[cst.FunctionDef, bool] = {}  # functions computing where their operands are (calls.py)
        self._instances: dict[int, object] = {}  # binding -> the instance it holds (instances.py)
        self._instance_values: dict[tuple[int, int], object] = {}
        self._clean: set[object] = set()  # memo keys whose answer asked the project nothing
        # The seed's caches of ``_reused``, by the id of this analysis's own: an entry there
        # that asked the project nothing is this analysis's answer too, as in ``_solve``.
        self._seeded_caches = {id(self._origins): seed._origins, id(self._qualnames): seed._qualnames, id(self._module_facts): seed._module_facts} if seed is not None else None  # noqa: SLF001
        # Read when a key is first asked, not copied now: the seed goes on answering (the
        # project's summary computes some of its fields only when the view reads them).
        self._seed = seed

    # -- public ---------------------------------------------------------------------------
    def kind(self, node: cst.BaseExpression) -> Kind:
        k = self._eval(node)
        return k if k is not None else Kind.UNKNOWN

    def is_device(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` plausibly a device tensor (not a container of them)?"""
        return self.kind(node) is Kind.DEVICE

    def holds_device(self, node: cst.BaseExpression) -> bool:
        """A device tensor or a container of them: what formatting reads tensor by tensor."""
        return self.kind(node) in DEVICE_VALUES

    def _reused(self, cache: dict, key: object, compute, keep: object = None):
        """``compute()``, memoised in ``cache`` (an entry holds ``keep``: the node an id in
        ``key`` stands for, kept alive). An answer whose computation asked the project
        (a star import's name, the project's accelerator) counts as asking it again each time it
        is reused, so that what ``_solve`` marks clean never leaned on the project, even
        through a cache."""
        entry = cache.get(key)
        if entry is None:
            seeded = self._seeded_caches[id(cache)].get(key) if self._seeded_caches is not None else None
            if seeded is not None and not seeded[1]:
                cache[key] = seeded
                return seeded[0]
            before = self._asked[0]
            entry = cache[key] = (compute(), self._asked[0] != before, keep)
        elif entry[1]:
            self._asked[0] += 1
        return entry[0]

    def qualname(self, node: cst.BaseExpression) -> str | None:
        """The imported name ``node`` (a dotted name) refers to, unless a local binding of its
        root shadows the import (`import model` ... `model = model.Net()` in a script)."""
        entry = self._qualnames.get(id(node))
        if entry is not None and not entry[1]:  # (asked of nearly every node: the common hit inline)
            return entry[0]
        return self._reused(self._qualnames, id(node), lambda: self._qualname(node), node)

    def _qualname(self, node: cst.BaseExpression) -> str | None:
        qn = self.index.imports.qualname(node)
        if qn is None and self.index.imports.star_imports:
            qn = self._star_qualname(node)
        if qn is None:
            return None
        root = node
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is cst.Name and self._shadows_import(root):
            return None
        return qn

    def _star_qualname(self, node: cst.BaseExpression) -> str | None:
        """`torch.zeros` where `torch` came from `from utils import *` (the project view knows
        what that module binds)."""
        parts = dotted_parts(node)
        if not parts or self.reaching_defs_of_root(node):
            return None
        base = self.env.star_import(parts[0])
        return canonical(".".join([base, *parts[1:]])) if base is not None else None

    def reaching_defs_of_root(self, node: cst.BaseExpression) -> list[Def]:
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        return self.reaching_defs(root) if isinstance(root, cst.Name) else []

    def _shadows_import(self, name: cst.Name) -> bool:
        key = id(name)
        found = self._shadowed_roots.get(key)
        if found is None:
            defs = self.reaching_defs(name)
            # An import, or the optional-import fallback `except ImportError: wandb = None`.
            found = any(
                not (d.how == "opaque" and isinstance(d.stmt, (cst.Import, cst.ImportFrom))) and not (d.how == "assign" and isinstance(d.value, cst.Name) and d.value.value == "None")
                for d in defs
            )
            self._shadowed_roots[key] = found
        return found

    def reaching_defs(self, name: cst.Name) -> list[Def]:
        return self.bindings.reaching_defs(name)

    def origin_qualname(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """The qualified name of the call that created ``expr``, directly or through local
        names whose every reaching assignment agrees (`s = torch.cuda.Stream()`; `s`), or
        through a parameter that every call site (in this module or, with a project view,
        another) binds to an object made by the same call."""
        if depth > 8:
            return None  # `a = b; b = a` in a loop, or a long chain of aliases
        # An answer depends only on deeper ones: memoising by depth is exact, and keeps fan-out
        # (call sites x defs) from exploding.
        return self._reused(self._origins, (id(expr), depth), lambda: self._origin_qualname(expr, depth), expr)

    def _origin_qualname(self, expr: cst.BaseExpression, depth: int) -> str | None:
        kind = type(expr)  # exact types (analysis/tree.exact_types)
        if kind is cst.Call:
            func = expr.func
            if type(func) is cst.Attribute and func.attr.value in _SAME_OBJECT_METHODS and self.qualname(func) is None:
                return self.origin_qualname(func.value, depth + 1)  # `MultiBoxLoss(...).to(device)`
            return self.qualname(func)
        if kind is cst.IfExp:  # `SummaryWriter() if log else None`: the object, when there is one
            sides = [s for s in (expr.body, expr.orelse) if not is_none(s)]
            return self.origin_qualname(sides[0], depth + 1) if len(sides) == 1 else None
        if kind is cst.Name:
            defs = self.index.through_moves(self.reaching_defs(expr))  # `net.to(device)` as a statement: the object it placed
            if defs and all(d.how == "param" for d in defs):
                return self._param_origin(defs[0], depth) if len(defs) == 1 else None
            # `writer = SummaryWriter(...) if log else None`: the object, when there is one;
            # `acc, lr = Meter(), Meter()`: each element's own maker
            values = [d.value if d.how == "assign" else literal_element(d) for d in defs if d.how in ("assign", "unpack")]
            origins = {self.origin_qualname(v, depth + 1) for v in values if v is not None and not is_none(v)}
            return origins.pop() if len(origins) == 1 else None
        stores = self.index.field_defs(expr)  # `self.writer` (stored here or by a base), `trainer.writer`
        if stores:
            origins = {self.origin_qualname(d.value, depth + 1) for d in stores if d.how == "assign" and d.value is not None}
            return origins.pop() if len(origins) == 1 else None
        return None

    def _param_origin(self, d: Def, depth: int) -> str | None:
        """The maker of what every call site (here and, with a project view, elsewhere) passes
        for a parameter, when they all agree (`train(loader, model, criterion)` called with
        `criterion = MultiBoxLoss(...).to(device)`)."""
        origins = set()
        for call in self.index.call_sites(d.func):
            arg = self.index.argument_for(call, d.func, d.param)
            origins.add(self.origin_qualname(arg, depth + 1) if arg is not None else None)
        remote = self.env.param_origin(d.func, d.param)
        if remote is not None:
            origins.add(remote)
        return origins.pop() if len(origins) == 1 else None

    # -- evaluation: memo and cycles ------------------------------------------------------
    def _eval(self, node: cst.BaseExpression) -> Kind | None:
        return self._solve(id(node), lambda: self._compute(node))

    def _solve(self, key: object, compute) -> Kind | None:
        """``compute()``, memoised, with cycles solved to a fixed point at their head.

        A node that is already being computed (a cycle) answers with its current
        approximation (None at first). The node that heads the cycle recomputes until its
        value stops changing. A node computed on top of an unfinished one is not memoised: it
        is kept with the values the unfinished nodes gave it, and reused wherever they give the
        same values again, whichever path reaches it (a cycle through many call sites reaches
        each node along many paths; recomputing it per path is exponential in the fan-out).
        """
        if key in self._memo:
            if key not in self._clean:
                self._asked[0] += 1  # leaning on an answer the project gave
            return self._memo[key]
        seed = self._seed
        if seed is not None and key in seed._clean and key in seed._memo:  # noqa: SLF001
            self._clean.add(key)
            result = self._memo[key] = seed._memo[key]  # noqa: SLF001
            return result
        depth = self._active.get(key)
        if depth is not None:
            self._lowest_cut = min(self._lowest_cut, depth)
            value = self._approx.get(key)
            if self._leaned:
                self._leaned[-1][key] = value
            return value
        provisional = self._provisional.get(key)
        if provisional is not None:
            self._asked[0] += 1  # (never reused across analyses: count it as asked)
            result, leaned = provisional
            cut = self._still_given(leaned)
            if cut is not None:
                self._lowest_cut = min(self._lowest_cut, cut)
                if self._leaned:
                    self._leaned[-1].update((k, v) for k, v in leaned.items() if k in self._active)
                return result
        depth = len(self._active)
        self._active[key] = depth
        self._leaned.append({})
        outer_cut = self._lowest_cut
        asked_before = self._asked[0]
        try:
            for _ in range(MAX_ROUNDS):
                self._leaned[depth] = {}
                self._lowest_cut = _NO_CUT
                result = compute()
                if (result is Kind.DEVICE or result is Kind.CONTAINER) and not self.uses_accelerator:
                    result = Kind.HOST_TENSOR
                if self._lowest_cut != depth or self._approx.get(key) == result:
                    break  # no cycle through this node, or its fixed point is reached
                self._approx[key] = result
        finally:
            del self._active[key]
            leaned = self._leaned.pop()
            self._approx.pop(key, None)
        leaned.pop(key, None)
        if self._lowest_cut >= depth:
            self._memo[key] = result
            if self._asked[0] == asked_before:
                self._clean.add(key)
        elif self._lowest_cut >= 0:
            self._provisional[key] = (result, leaned)
            if self._leaned:
                self._leaned[-1].update(leaned)
        self._lowest_cut = min(outer_cut, self._lowest_cut if self._lowest_cut < depth else _NO_CUT)
        return result

    def _still_given(self, leaned: dict) -> int | None:
        """The shallowest depth among the in-progress nodes of ``leaned`` when each of them
        (or, finished since, its memoised answer) still gives the value recorded there;
        None when one does not."""
        cut = _NO_CUT
        for k, value in leaned.items():
            depth = self._active.get(k)
            if depth is not None:
                if self._approx.get(k) != value:
                    return None
                cut = min(cut, depth)
            elif k not in self._memo or self._memo[k] != value:
                return None
        return cut

    def _compute(self, node: cst.BaseExpression) -> Kind | None:
        # Exact type tests (the node classes below have no subclasses; isinstance against
        # libcst's abstract base classes is slow, and every value question comes here).
        kind = type(node)
        if kind in _LITERAL_TYPES:
            return Kind.HOST
        if kind is cst.Name:
            if node.value in ("None", "True", "False"):
                return Kind.HOST
            return self._name(node)
        if kind is cst.Attribute:
            return self._attribute(node)
        if kind is cst.Call:
            return self._call(node)
        if kind is cst.Subscript:
            return self._subscript(node)
        if kind is cst.BinaryOperation:
            if isinstance(node.operator, cst.Modulo) and self._is_text(node.left):
                return Kind.HOST  # "%s" % t: string formatting
            if isinstance(node.operator, cst.Add) and (self._is_text(node.left) or self._is_text(node.right)):
                return Kind.HOST  # `dir + "/" + name`: text
            return combine(self._eval(node.left), self._eval(node.right))
        if kind is cst.UnaryOperation:
            if isinstance(node.operator, cst.Not):
                return Kind.HOST
            return combine(self._eval(node.expression))
        if kind is cst.Comparison:
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return Kind.HOST
            return combine(self._eval(node.left), *(self._eval(c.comparator) for c in node.comparisons))
        if kind is cst.BooleanOperation:
            return join([self._eval(node.left), self._eval(node.right)])
        if kind is cst.IfExp:
            return join([self._eval(node.body), self._eval(node.orelse)])
        if kind is cst.Tuple or kind is cst.List or kind is cst.Set:
            return self._container([self._eval(el.value) for el in node.elements])
        if kind is cst.Dict:
            return self._container([self._eval(el.value) for el in node.elements if isinstance(el, cst.DictElement)], partial=True)
        if kind is cst.ListComp or kind is cst.SetComp or kind is cst.GeneratorExp:
            return Kind.CONTAINER if self._eval(node.elt) in DEVICE_VALUES else Kind.UNKNOWN
        if kind is cst.DictComp:
            return Kind.CONTAINER if self._eval(node.value) in DEVICE_VALUES else Kind.UNKNOWN
        if kind is cst.NamedExpr:
            return self._eval(node.value)
        return Kind.UNKNOWN

    @staticmethod
    def _container(kinds: list[Kind | None], partial: bool = False) -> Kind:
        """A tuple/list/dict as a whole: a device value in it makes it a container of device
        tensors (read element by element); all host tensors make a host-tensor container."""
        if Kind.DEVICE in kinds or Kind.CONTAINER in kinds:
            return Kind.CONTAINER
        if not partial and kinds and all(k in HOST_KINDS for k in kinds):
            return Kind.HOST_TENSOR if Kind.HOST_TENSOR in kinds else Kind.HOST
        return Kind.UNKNOWN

    def _is_text(self, node: cst.BaseExpression) -> bool:
        """A string literal, or an expression built only from them (`("%10s" * 3)`)."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
            return self._is_text(node.left) or (isinstance(node.operator, cst.Add) and self._is_text(node.right))
        return False

    # -- names ----------------------------------------------------------------------------
    def _name(self, node: cst.Name) -> Kind | None:
        defs = self.reaching_defs(node)
        if not defs:
            qn = self.qualname(node)  # `from proj.config import device`
            remote = self.env.symbol_kind(qn) if qn is not None else None
            return remote if remote is not None else Kind.UNKNOWN
        if self._not_a_tensor_here(node, defs):
            return Kind.HOST  # the `else` of `isinstance(value, torch.Tensor)`
        kinds = [Kind.HOST if len(defs) > 1 and self.converted_before(node, d) else self._def(d) for d in defs]
        if any(d.how == "assign" and (type(d.value) in (cst.List, cst.Dict) or empty_container_call(d.value, self.index)) for d in defs) and self._device_added_to(node):
            kinds.append(Kind.CONTAINER)  # `res = []` ... `res.append(acc.mul_(100))`: it holds device tensors
        return join(kinds) if any(k is not None for k in kinds) else None

    def _def(self, d: Def) -> Kind | None:
        return self.with_evidence(d, self._bound_value(d))

    def _bound_value(self, d: Def) -> Kind | None:
        if d.how == "assign":
            kind = self._eval(d.value)
            if kind is Kind.CPU_MODEL and not self._stays_on_cpu(d):
                return Kind.MODEL
            return kind
        if d.how == "unpack":
            return self._element(d.value, d.path)
        if d.how == "for":
            return self._iter_element(d.value, d.path)
        if d.how == "aug":
            target = d.stmt.target if isinstance(d.stmt, cst.AugAssign) else None
            return combine(self._eval(target) if target is not None else None, self._eval(d.value))
        if d.how == "param":
            return self._solve(("param", id(d.param)), lambda: self._param(d))
        if d.how == "star":
            return self._solve(("star", id(d.param)), lambda: self._star_param(d))
        if d.how == "module-move":
            return Kind.MODEL
        if d.how == "state":
            return Kind.DEVICE  # a metric's state lives where the metric does: with its module, on the device
        return Kind.UNKNOWN

    def _stays_on_cpu(self, d: Def) -> bool:
        """A module bound here by its constructor stays on the CPU unless the name is moved
        (`.to(...)`, `.cuda()`), or escapes to code we cannot see (an argument, a return, an
        attribute or container store, an alias) anywhere in the scope that binds it."""
        scope = self.index.scope_of(d.stmt)
        key = (id(scope), d.name)
        if key not in self._placements:
            self._placements[key] = not any(self._moves_or_escapes(n) for n in self.index.tree.walk_subtree(scope) if type(n) is cst.Name and n.value == d.name)
        return self._placements[key]

    def _moves_or_escapes(self, name: cst.Name) -> bool:
        parent = self.index.parent(name)
        if isinstance(parent, cst.Attribute) and parent.value is name:
            return parent.attr.value in _MOVING_METHODS  # `model.to(device)`, `model.cuda()`
        if isinstance(parent, cst.Call) and parent.func is name:
            return False  # a forward
        if isinstance(parent, cst.Arg):
            call = self.index.parent(parent)
            callee = call.func if isinstance(call, cst.Call) else None
            return not (isinstance(callee, cst.Name) and callee.value in _NON_MOVING_BUILTINS)
        if isinstance(parent, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.AnnAssign, cst.For, cst.CompFor, cst.AugAssign)):
            return False  # the binding itself, or a loop target
        if isinstance(parent, (cst.Comparison, cst.IfExp, cst.If, cst.While, cst.Assert, cst.FormattedStringExpression, cst.BooleanOperation)):
            return False  # read, not handed on
        return True  # returned, stored, aliased, put in a container, passed through `**`...


_NO_CUT = 1 << 30


# Methods of a module that return the same object (its maker stays its origin).
_SAME_OBJECT_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval", "requires_grad_", "to_empty", "xpu"})
# Methods that move a module (or tensor) to another device in place or by returning it.
_MOVING_METHODS = frozenset({"to", "cuda", "xpu", "npu", "mps", "ipu", "mtia", "to_empty"})
# Builtins that read a value without keeping it (a model passed to them does not escape).
_NON_MOVING_BUILTINS = frozenset({"print", "len", "isinstance", "type", "id", "str", "repr", "hasattr", "getattr", "callable", "vars", "dir"})
