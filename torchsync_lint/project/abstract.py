"""The abstract value (absval.py) of an expression of one module, from that module alone: what
the module's summary says its returns, arguments, attributes and loops hold.

Values the module cannot decide stay symbolic for the project view: a parameter (what callers
pass), a call of project code (with its arguments, so the view answers per call), an imported
name, an attribute of another value (`data.train`), and joins that hold any of these.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.calls import is_operand_function
from torchsync_lint.analysis.cli_options import declared_choices, option_choices
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.kinds import DEVICE_VALUES, Kind
from torchsync_lint.knowledge import torch as tk
from torchsync_lint.knowledge.loaders import TQDM_BARS
from torchsync_lint.knowledge.python import ATTRIBUTE_DICTS
from torchsync_lint.project import absval
from torchsync_lint.analysis.index import is_none, literal_element, param_index
from torchsync_lint.analysis.tree import SCOPE_TYPES, innermost
from torchsync_lint.project.callees import CalleeNames
from torchsync_lint.project.describe import describe_metric
from torchsync_lint.pytree import evaluated_literal

MAX_DEPTH = 10
_MAX_NAMES_AT_CUT = 32  # (names of an expression cut off at MAX_DEPTH looked at)
_IDENTITY_TESTS = frozenset({cst.Is, cst.IsNot, cst.In, cst.NotIn})  # comparisons whose result is a bool
# Values a call may run project code through.
_CALLABLE_VALUES = frozenset({"class", "func", "any", "member", "sym", "param", "entry"})
_WRAPPERS = frozenset({"enumerate", "iter", "reversed", "zip", "tqdm", *TQDM_BARS, "itertools.islice", "islice"})
# Tensor methods whose result is a tensor where the receiver is.
_TENSOR_METHODS = tk.TENSOR_METHODS - tk.HOST_RESULT_METHODS - tk.SHARED_METHODS


def _like(value: dict) -> dict | None:
    """A tensor computed from ``value`` when that is symbolic (a parameter, another module's
    result): it lives where ``value`` does."""
    if value.get("k") in absval.SYMBOLIC:
        return value if value.get("k") == "like" else {"k": "like", "of": value}
    return None


def _accumulates(defs: list) -> bool:
    """Are ``defs`` an accumulator's: a number literal it starts from, and augmented
    assignments or assignments of arithmetic on itself (`total = 0` ... `total += x`,
    `total = total ** (1 / p)`)?"""
    starts = [d for d in defs if d.how == "assign" and type(d.value) in (cst.Integer, cst.Float)]
    return bool(starts) and len(starts) < len(defs) and all(d in starts or d.how == "aug" or _updates_itself(d) for d in defs)


def _updates_itself(d) -> bool:
    """`total = total + x`, `norm = norm ** 0.5`: arithmetic with the bound name as an operand."""
    value = d.value
    return d.how == "assign" and type(value) is cst.BinaryOperation and any(type(side) is cst.Name and side.value == d.name for side in (value.left, value.right))


def _constant_index(expr: cst.Subscript) -> bool:
    """`d["key"]`, `t[0]`: one constant index (a registry is picked from by a config value)."""
    return len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, (cst.SimpleString, cst.Integer))


def _string_index(expr: cst.Subscript) -> str | None:
    """The key of `d["name"]`: one string literal index."""
    if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.SimpleString):
        key = evaluated_literal(expr.slice[0].slice.value)
        return key if isinstance(key, str) else None
    return None


def _integer_index(expr: cst.Subscript) -> int | None:
    """``n`` of `t[n]` for a literal non-negative integer ``n``."""
    if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.Integer):
        return evaluated_literal(expr.slice[0].slice.value)
    return None


def _mentions_parameters(value: dict) -> bool:
    """Does ``value`` refer to a parameter of the function it was read in (at any depth)?"""
    if value.get("k") == "param":
        return True
    return any(_mentions_parameters(v) for v in _parts(value))


def _parts(value: dict):
    for key in ("of", "items", "args", "kwargs"):
        inner = value.get(key)
        if isinstance(inner, dict):
            yield from (inner.values() if key in ("items", "kwargs") else [inner])
        elif isinstance(inner, list):
            yield from inner


_CONTAINER_EXPRESSIONS = frozenset({cst.Name, cst.Attribute, cst.Dict, cst.DictComp})  # what may hold a dict of metrics


class AbstractValues:
    def __init__(self, analysis, names: CalleeNames, loaders, metrics) -> None:
        self.index = analysis.index
        self.values = analysis.values
        self.names = names
        self.loaders = loaders
        self.metrics = metrics
        self._open_defs: set[int] = set()  # stores to `self.<attr>` being summarised (cycles)
        self._memo: dict[tuple, dict] = {}
        self._appends: dict[int, dict[str, list[cst.BaseExpression]]] | None = None  # class -> attr -> appended values
        self._fills: dict[int, list] | None = None  # empty-list binding -> appended values (None: filled otherwise)
        self._options: dict[str, list[str]] | None = None  # argparse destination -> its choices

    def _declared_options(self) -> dict[str, list[str]]:
        if self._options is None:
            self._options = declared_choices(self.index)
        return self._options

    def abs_of(self, expr: cst.BaseExpression, depth: int = 0) -> dict:
        # An answer depends on the node, the depth left (the cut-off) and the stores being
        # summarised, nothing else: memoised on those. Without it a chain of reassignments in a
        # loop (`x = f(x)`, several reaching definitions each) is walked once per path, which
        # is exponential in the depth (ssd-lufficc: 350,000 calls for 900 names).
        # An answer depends on the node, the depth left (the cut-off) and the stores being
        # summarised, nothing else: memoised on those. Without it a chain of reassignments in a
        # loop (`x = f(x)`, several reaching definitions each) is walked once per path, which
        # is exponential in the depth (ssd-lufficc: 350,000 calls for 900 names).
        key = (id(expr), depth, frozenset(self._open_defs)) if self._open_defs else (id(expr), depth)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._abs_of(expr, depth)
        return found

    def _abs_of(self, expr: cst.BaseExpression, depth: int) -> dict:
        if depth > MAX_DEPTH:
            if self._reads_its_own_binding(expr):
                # `step = train_step(..., step)` followed round the loop to the cut-off: what it
                # adds beyond the bindings above is the loop's own value (absval.CYCLE: joins
                # drop it), not the module's guess for the opaque call, "device"
                return absval.CYCLE
            return absval.of_kind(self.values.kind(expr))
        found = self.loaders.loaders_of(expr)
        if found:
            return {"k": "loader", "sites": sorted({self.names.site(info.call) for info in found})}
        sites = self.metrics.sites_of(expr) if self.metrics.sites else []
        if sites:
            described = self._one_description(sites)
            if described is not None:
                return described
        elif self.metrics.sites and type(expr) in _CONTAINER_EXPRESSIONS:
            held = self._metric_dict(expr)
            if held is not None:
                return held
        kind = type(expr)  # exact types (analysis/tree.exact_types): asked of most expressions
        if kind is cst.Name:
            value = self._name(expr, depth)
            if absval.kind_of(value) is Kind.UNKNOWN and value.get("k") not in absval.SYMBOLIC and value.get("k") != "cycle" and self.values.kind(expr) in DEVICE_VALUES:
                return absval.of_kind(self.values.kind(expr))  # what the module alone knows better (`d = {}` later filled with losses)
            return value
        operands = self._operands(expr)
        if operands and self.values.kind(expr) is Kind.UNKNOWN:  # else the module alone knows better
            derived = self._derived([self.abs_of(e, depth) for e in operands])  # a subexpression: no new definition followed
            if derived is not None:
                return derived
        if kind is cst.Call:
            return self._call(expr, depth)
        if kind is cst.IfExp and (is_none(expr.body) or is_none(expr.orelse)) and not (is_none(expr.body) and is_none(expr.orelse)):
            # `get_loader(...) if cfg.train else None`: the object, as for a `None` binding (_name)
            return self.abs_of(expr.orelse if is_none(expr.body) else expr.body, depth + 1)
        if kind is cst.IfExp and not is_none(expr.body) and not is_none(expr.orelse):
            # `Mapping() if args.mapping else Other()`: either object, as two bindings would be
            return absval.join_abs([self.abs_of(expr.body, depth + 1), self.abs_of(expr.orelse, depth + 1)])
        if (kind is cst.Tuple or kind is cst.List) and not any(type(el) is cst.StarredElement for el in expr.elements):
            return {"k": "tuple", "items": [self.abs_of(el.value, depth + 1) for el in expr.elements]}
        if kind is cst.Dict and all(type(el) is cst.DictElement and type(el.key) is cst.SimpleString for el in expr.elements):
            return {"k": "dict", "items": {evaluated_literal(el.key): self.abs_of(el.value, depth + 1) for el in expr.elements}}
        if kind is cst.Attribute:
            return self._attribute(expr, depth)
        if kind is cst.Subscript:
            return self._subscript(expr, depth)
        return self.kind_or_device(expr)

    def _self_appends(self) -> dict[int, dict[str, list[cst.BaseExpression]]]:
        """class -> attr -> the values its methods' own bodies append to `self.<attr>`, from one
        pass over the module's calls (not a walk of every method of every class)."""
        if self._appends is None:
            self._appends = {}
            tree, methods, memo = self.index.tree, self.index.class_of_method, {}
            for call in self.index.calls:
                func = call.func
                if type(func) is not cst.Attribute or func.attr.value != "append" or len(call.args) != 1:
                    continue
                parts = dotted_parts(func.value)
                owner = innermost(tree.parents, memo, call, SCOPE_TYPES)  # a nested function's call is not the method's
                info = methods.get(owner)
                if parts and len(parts) == 2 and parts[0] == "self" and info is not None and info.methods.get(owner.name.value) is owner and tree.inside(call, owner.body):
                    self._appends.setdefault(id(info), {}).setdefault(parts[1], []).append(call.args[0].value)
        return self._appends

    def _metric_dict(self, expr: cst.BaseExpression) -> dict | None:
        """`{"loss": MeanMetric().to(device), "acc": Accuracy(...)}` (or a name, an attribute or a
        comprehension holding one): a dict of metric descriptions, key by key, so that another
        module's `metrics["loss"].update(loss)` knows the metric (None: not wholly such a dict)."""
        box = self.metrics.container(expr)
        if not box or not all(isinstance(k, str) for k in box):
            return None
        items = {}
        for key, group in box.items():
            described = self._one_description(group)
            if described is None:
                return None
            items[key] = described
        return {"k": "dict", "items": items}

    def _one_description(self, sites) -> dict | None:
        """The description of metric ``sites`` that all describe alike (one class,
        configuration and device), else None."""
        described = [describe_metric(self.metrics, s) for s in sites]
        return described[0] if len({repr(d) for d in described}) == 1 else None

    def _reads_its_own_binding(self, expr: cst.BaseExpression) -> bool:
        """Does ``expr`` read a name inside a statement that binds that name (`step =
        f(..., step)`, `x += g(x)`), the binding reaching the read? In a loop that binding
        reaches it on the next pass: the value is the loop's own previous one."""
        names = [expr] if type(expr) is cst.Name else [n for n in self.index.tree.walk_subtree(expr) if type(n) is cst.Name]
        for name in names[:_MAX_NAMES_AT_CUT]:
            if any(d.how in ("assign", "unpack", "aug") and d.stmt is not None and self.index.inside(name, d.stmt) for d in self.values.reaching_defs(name)):
                return True
        return False

    def _filled_list(self, d, depth: int) -> dict | None:
        """`loaders = []` then `loaders.append(train_loader)`: the list holds what is appended to
        it (any of them, as for `self.<attr>`); unknown when it is also filled another way
        (`extend`, `insert`). None when nothing is added: the empty list it is."""
        added = self._local_fills().get(id(d))
        if not added:
            return None
        if any(arg is None for arg in added):
            return absval.UNKNOWN
        return {"k": "tuple", "items": self._distinct_values(added, depth + 1)}

    def _local_fills(self) -> dict[int, list]:
        """id(binding of an empty list) -> what `name.append(v)` calls add to it (None for an
        `extend`/`insert`), from one pass over the module's calls."""
        if self._fills is None:
            self._fills = {}
            for call in self.index.calls:
                func = call.func
                if type(func) is not cst.Attribute or type(func.value) is not cst.Name or func.attr.value not in ("append", "extend", "insert"):
                    continue
                arg = call.args[0].value if func.attr.value == "append" and len(call.args) == 1 else None
                for d in self.values.reaching_defs(func.value):
                    if d.how == "assign" and type(d.value) is cst.List and not d.value.elements:
                        self._fills.setdefault(id(d), []).append(arg)
        return self._fills

    def _operands(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The operands of arithmetic whose result is a tensor where they are (the rule of the
        module-alone analysis, analysis/values.py): `x * scale`, `-x`, `x > t`, and calls of
        torch functions that compute on their tensor arguments (`torch.max(a, b)`)."""
        kind = type(expr)
        if kind is cst.BinaryOperation:
            return [expr.left, expr.right]
        if kind is cst.UnaryOperation and type(expr.operator) is not cst.Not:
            return [expr.expression]
        if kind is cst.Comparison and not any(type(c.operator) in _IDENTITY_TESTS for c in expr.comparisons):
            return [expr.left, *(c.comparator for c in expr.comparisons)]
        if kind is cst.Call and is_operand_function(self.values.qualname(expr.func) or ""):
            return [a.value for a in expr.args if not a.star]
        return []

    @staticmethod
    def _derived(operands: list[dict]) -> dict | None:
        """A tensor computed from symbolic operands (a parameter, another module's result) and
        host values lives where the symbolic ones are: the view decides."""
        operands = [item for v in operands for item in (v["items"] if v.get("k") == "tuple" else [v])]  # `torch.cat([a, b])`
        operands = [v for v in operands if v.get("k") != "cycle"] or operands  # `total = total + x` in its loop: what x adds
        symbolic = [v for v in operands if v.get("k") in absval.SYMBOLIC]
        if symbolic and all(v in symbolic or v.get("k") in ("host", "host-tensor") for v in operands):
            return _like(symbolic[0] if len(symbolic) == 1 else absval.join_abs(symbolic))
        return None

    def _subscript(self, expr: cst.Subscript, depth: int) -> dict:
        """`MODELS[name]` of a dict display: the value under a constant key, else any of them
        when they are classes or functions (a factory picked by the config)."""
        base = self.abs_of(expr.value, depth) if isinstance(expr.value, (cst.Name, cst.Attribute, cst.Subscript)) else None
        registry = self.values.qualname(expr.value)
        if base is not None and registry is not None and base.get("k") in ("sym", "attr") and not _constant_index(expr):
            choices = option_choices(self._declared_options(), expr.slice[0].slice.value) if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) else None
            if choices is not None:
                return {"k": "entry", "of": base, "name": registry, "keys": choices}  # `all_datasets[args.dataset]` of `choices=[...]`: those items
            return {"k": "entry", "of": base, "name": registry}  # `registry.BOX_HEADS[cfg.name]`: the view looks up what was registered
        key = _string_index(expr)
        if base is not None and registry is not None and base.get("k") in ("sym", "attr") and key is not None:
            return {"k": "entry", "of": base, "name": registry, "key": key}  # `all_datasets["CIFAR10"]` of another module: that item
        if base is not None and base.get("k") in absval.SYMBOLIC and self.values.kind(expr) is Kind.UNKNOWN:
            position = _integer_index(expr)
            if position is not None:
                # `batch[0]`: element 0 of what the parameter is (a tuple's own element; a
                # tensor's row, where the tensor is)
                return {"k": "elem", "of": base, "i": position}
            return _like(base)  # `x[:, 2]`, `boxes[i]` of a parameter: where it is (as a device tensor's part is)
        if base is None or base.get("k") != "dict" or len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return self.kind_or_device(expr)
        key = expr.slice[0].slice.value
        if isinstance(key, cst.SimpleString):
            return base["items"].get(evaluated_literal(key), absval.UNKNOWN)
        items = list(base["items"].values())
        if items and all(v.get("k") in _CALLABLE_VALUES for v in items):
            return absval.join_abs(items)
        return self.kind_or_device(expr)

    def callee_value(self, func: cst.BaseExpression, depth: int = 0) -> dict | None:
        """The value a call calls when no name says which project code it is: a class or
        function picked from a dict (`ARCHS[cfg.arch](cfg)`) or from a module
        (`getattr(models, cfg["type"])(...)`), or a name bound to such a pick."""
        kind = type(func)  # exact types (analysis/tree.exact_types): asked of every call
        if kind is cst.Call:
            value = self._getattr_member(func, depth)
        elif kind is cst.Subscript or kind is cst.Name:
            value = self.abs_of(func, depth + 1)
            if kind is cst.Name and value.get("k") in ("vcall", "call", "instance", "elem", "item"):
                return value  # an object made by such a pick (or unpacked: `net_g, net_d = nets`), called: its `__call__`/`forward`
            if kind is cst.Name and value.get("k") in ("sym", "param") and not any(d.how == "assign" for d in self.values.reaching_defs(func)):
                return None  # an imported name or a parameter: named by the callee already, or a library's
        else:
            return None
        if value is None or value.get("k") not in _CALLABLE_VALUES:
            return None
        return value

    def _getattr_member(self, call: cst.Call, depth: int) -> dict | None:
        func = call.func
        if not (isinstance(func, cst.Name) and func.value == "getattr" and len(call.args) == 2) or self.index.binds_locally("getattr", func):
            return None
        name = call.args[1].value
        base = self.abs_of(call.args[0].value, depth + 1)
        if isinstance(name, cst.SimpleString) or base.get("k") not in ("sym", "param", "module", "any"):
            return None  # `getattr(obj, "attr")`: an attribute, not a pick
        return {"k": "member", "of": base}

    def _attribute(self, expr: cst.Attribute, depth: int) -> dict:
        qn = self.values.qualname(expr)
        if qn is not None and not qn.startswith("torch."):
            return {"k": "sym", "name": qn}
        parts = dotted_parts(expr)
        if parts and len(parts) == 2 and parts[0] == "self":
            info = self.index.class_of(expr)
            defs = info.self_attrs.get(parts[1], []) if info is not None else []
            appended = self.appended(info, parts[1]) if info is not None and defs else []
            if appended:
                return {"k": "tuple", "items": appended}
            # `self.x = self.x.cuda()`: inside a store of `x`, `self.x` is what the other stores
            # put there (the stores being read are left out: no cycle)
            todo = [d for d in defs if id(d) not in self._open_defs]
            if len(todo) < len(defs) and not todo:
                return absval.UNKNOWN
            found_values = []
            for d in todo:
                self._open_defs.add(id(d))
                try:
                    found_values.append(self.stored_value(d, depth + 1))
                finally:
                    self._open_defs.discard(id(d))
            if todo and all(v is not None for v in found_values):
                return absval.join_abs(found_values)
            return self.kind_or_device(expr)
        if qn is None and expr.attr.value not in tk.HOST_ATTRIBUTES:
            base = self.abs_of(expr.value, depth + 1)
            if base.get("k") in absval.SYMBOLIC or base.get("k") in ("instance", "object"):
                own = self.values.kind(expr)
                if own in (Kind.UNKNOWN, Kind.MOVED, Kind.PREPARED):
                    return {"k": "attr", "of": base, "name": expr.attr.value}  # `data.train`: the view knows `data`
        return self.kind_or_device(expr)

    def appended(self, info, attr: str) -> list[dict]:
        """What the class's methods append to a container it stores on `self.<attr>`
        (`self.flows = nn.ModuleList()`, then `self.flows.append(ConvFlow(...))`): iterating
        it gives one of these."""
        return self._distinct_values(self._self_appends().get(id(info), {}).get(attr, ()), 0)

    def _distinct_values(self, exprs, depth: int) -> list[dict]:
        """The abstract values of ``exprs``, each once, in order."""
        out: list[dict] = []
        for expr in exprs:
            value = self.abs_of(expr, depth)
            if value not in out:
                out.append(value)
        return out

    def stored_value(self, d, depth: int = 0) -> dict | None:
        """What an assignment to `self.<attr>` stores: `self.x = v`, one element of
        `self.a, self.b = a, b`, what `self.x += v` adds; None for any other binding."""
        if d.value is None:
            return None
        if d.how == "assign":
            return self.abs_of(d.value, depth)
        if d.how == "unpack" and len(d.path) == 1:
            return absval.element(self.abs_of(d.value, depth), d.path[0])
        if d.how == "aug":  # `self.sum += val * n`: the sum holds what is added (joined with its start)
            return _like(self.abs_of(d.value, depth)) or self.abs_of(d.value, depth)
        return None

    def kind_or_device(self, expr: cst.BaseExpression) -> dict:
        kind = self.values.kind(expr)
        if kind is Kind.HOST and self._is_device_spec(expr):
            where = self.values.device_of(expr)
            if where in ("cpu", "accelerator"):
                return {"k": "devspec", "where": where}
        return absval.of_kind(kind)

    def _is_device_spec(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return (self.values.qualname(expr.func) or "") == "torch.device"
        if isinstance(expr, cst.SimpleString):
            return self.values.device_of(expr) is not None
        return False

    def _param_value(self, d) -> dict | None:
        ref = self.names.ref(d.func)
        position = param_index(d.func, d.param)
        return {"k": "param", "fn": ref, "i": position} if ref is not None and position is not None else None

    def _name(self, expr: cst.Name, depth: int) -> dict:
        if expr.value in ("None", "True", "False"):
            return {"k": "host"}
        defs = self.values.reaching_defs(expr)
        info = self.index.local_class(expr) if not defs else None
        if info is not None and self.names.ref(info.node) is not None:
            return {"k": "class", "ref": self.names.ref(info.node)}  # `ARCHS = {"det": Detector}`: a class of the module as a value
        if not defs:
            qn = self.values.qualname(expr) or self.names._star_name(expr)  # noqa: SLF001
            return {"k": "sym", "name": qn} if qn is not None else absval.UNKNOWN
        if self.values._not_a_tensor_here(expr, defs):  # noqa: SLF001 - the module level's rule, the same answer
            return {"k": "host"}  # `if isinstance(data, np.ndarray): return data`
        if len(defs) == 1 and defs[0].how == "param":
            found = self._param_value(defs[0])
            return found if found is not None else self.kind_or_device(expr)
        if len(defs) == 1 and defs[0].how == "opaque" and isinstance(defs[0].stmt, (cst.FunctionDef, cst.ClassDef)):
            ref = self.names.ref(defs[0].stmt)
            if ref is not None:  # a function or class handed on as a value (a loss, a hook, a model)
                return {"k": "func" if isinstance(defs[0].stmt, cst.FunctionDef) else "class", "ref": ref}
        if all(d.how == "opaque" and isinstance(d.stmt, (cst.Import, cst.ImportFrom)) for d in defs):
            qn = self.values.qualname(expr)
            return {"k": "sym", "name": qn} if qn is not None else absval.UNKNOWN  # `import models`
        found = []
        # `loader = None` then `if ...: loader = get_loader(...)`: where the value is used as an
        # object (iterated, called, its attributes read) the None path would have failed, so
        # the object is what it is; None adds nothing beside another value
        if len(defs) > 1 and not all(d.how == "assign" and is_none(d.value) for d in defs):
            defs = [d for d in defs if not (d.how == "assign" and is_none(d.value))]
        if _accumulates(defs):
            # `total = 0` then `total += ...` in a loop: the number is the accumulator's start,
            # what it holds after the loop is what the additions make it
            defs = [d for d in defs if not (d.how == "assign" and type(d.value) in (cst.Integer, cst.Float))]
        for d in defs:
            if d.how == "assign" and d.value is not None:
                filled = self._filled_list(d, depth) if type(d.value) is cst.List and not d.value.elements else None
                found.append(filled if filled is not None else self.abs_of(d.value, depth + 1))
            elif d.how == "unpack" and d.value is not None and len(d.path) == 1:
                found.append(absval.element(self.abs_of(d.value, depth + 1), d.path[0]))
            elif d.how == "aug" and isinstance(d.stmt, cst.AugAssign):
                # `rt /= world_size`: where `rt` was; `total = 0` ... `total += (p.grad ** 2).sum()`:
                # a number accumulated with tensors is a tensor where the added ones are
                added = _like(self.abs_of(d.value, depth + 1)) if _accumulates(self.values.reaching_defs(d.stmt.target)) and self.values.kind(d.value) is not Kind.HOST else None
                found.append(added or _like(self.abs_of(d.stmt.target, depth + 1)) or self.kind_or_device(expr))
            elif d.how == "for" and not d.path and d.value is not None:
                inner = self.abs_of(self.unwrap(d.value), depth + 1)
                batch = self.loaders.is_batch_loop(d.stmt)  # a per-step loop's items are batches
                if inner["k"] in ("param", "call", "sym", "loader", "attr", "any") or (inner["k"] == "tuple" and any(v.get("k") in ("instance", "call", "vcall") for v in inner["items"])):
                    found.append({"k": "item", "of": inner, "batch": batch})
                else:
                    found.append(absval.of_kind(Kind.HOST_TENSOR) if batch and inner["k"] == "unknown" else self.kind_or_device(expr))
            elif d.how == "for" and d.value is not None and self._item_part(d, depth) is not None:
                found.append(self._item_part(d, depth))  # `for i, (x, y) in enumerate(self.loader)`
            elif d.how == "module-move" and isinstance(d.stmt, cst.Expr) and isinstance(d.stmt.value, cst.Call):
                found.append(self.abs_of(d.stmt.value, depth + 1))  # `model.to(device)` as a statement: the same module, placed
            elif d.how == "param" and self._param_value(d) is not None:
                found.append(self._param_value(d))  # `x = f(x)` in a loop: the parameter, or what the loop made of it
            else:
                return self.kind_or_device(expr)
        return absval.join_abs(found)

    def _item_part(self, d, depth: int) -> dict | None:
        """Part ``d.path`` of an item of a loop over a value the view must resolve (through
        `enumerate`, whose item 0 is the index); None when the module alone decides."""
        iterable, path = d.value, d.path
        while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate" and iterable.args and path:
            if path[0] == 0:
                return None
            iterable, path = iterable.args[0].value, path[1:]
        inner = self.abs_of(self.unwrap(iterable), depth + 1)
        if inner["k"] not in ("param", "call", "sym", "attr", "any", "instance") or self.values.kind(d.value) is not Kind.UNKNOWN:
            return None
        value: dict = {"k": "item", "of": inner}
        for i in path:
            value = absval.element(value, i) if i >= 0 else absval.UNKNOWN
        return value

    def _call(self, expr: cst.Call, depth: int) -> dict:
        func = expr.func
        if self.values.qualname(func) in tk.MODEL_WRAPPERS and expr.args and expr.args[0].keyword is None and not expr.args[0].star:
            wrapped = self.abs_of(expr.args[0].value, depth + 1)  # `DDP(net)`: its forward runs the module it wraps
            if wrapped.get("k") == "instance" or wrapped.get("k") == "call":
                return wrapped  # a module of the project, built here or by another module
            if wrapped.get("k") == "to" and wrapped["of"].get("k") in ("instance", "call"):
                return {**wrapped, "kind": "moved"}  # (`Net(...).cuda(rank)`): a module moved, never a tensor copied
        if isinstance(func, cst.Attribute) and func.attr.value in tk.MODEL_METHODS_KEEPING_MODEL and self.values.qualname(func) is None:
            receiver = self.abs_of(func.value, depth + 1)
            if receiver.get("k") == "instance":
                return {**receiver, "placed": receiver.get("placed") or func.attr.value in ("to", "cuda")}  # `model.to(device)`
            if receiver.get("k") in ("vcall", "call", "any", "param", "unknown", "item", "elem", "attr") and func.attr.value in ("to", "cuda"):
                # `get_instance(models, ...).to(device)`, a module built here or loaded from a
                # checkpoint: the same object moved, or a tensor copied (the view tells)
                return {"k": "to", "of": receiver, "kind": self.values.kind(expr).value}
        if isinstance(func, cst.Attribute) and func.attr.value in tk.MODEL_TENSOR_ITERATORS and self.values.qualname(func) is None and self.values.kind(expr) is Kind.UNKNOWN:
            receiver = self.abs_of(func.value, depth + 1)
            if receiver.get("k") in absval.SYMBOLIC or receiver.get("k") == "instance":
                return {"k": "params", "of": receiver}  # `net_d.parameters()` of a model another module places
        if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS and self.values.qualname(func) is None and not (func.attr.value in tk.HOST_RESULT_WITHOUT_ARGUMENTS and not expr.args):
            derived = _like(self.abs_of(func.value, depth))  # `tensor.clone()` of a parameter
            if derived is not None:
                return derived
        if isinstance(func, cst.Name) and func.value in ("iter", "next") and len(expr.args) == 1 and not self.index.binds_locally(func.value, func):
            inner = self.abs_of(expr.args[0].value, depth + 1)  # `next(self.loaditer)`, `iter(self.loader)`
            if inner.get("k") in absval.SYMBOLIC or inner.get("k") in ("loader", "instance"):
                return inner if func.value == "iter" else {"k": "item", "of": inner}
        if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values") and not expr.args and self.values.qualname(func) is None:
            receiver = self.abs_of(func.value, depth + 1)
            if receiver.get("k") in absval.SYMBOLIC:
                return receiver  # `batch.items()` of a parameter: a view of the same dict, its parts where the batch is
        if self.values.qualname(func) in ATTRIBUTE_DICTS and all(a.keyword is not None and not a.star for a in expr.args):
            # `Munch(generator=g, mapping=m)`: a dict of what it holds, read by key or attribute
            return {"k": "dict", "items": {a.keyword.value: self.abs_of(a.value, depth + 1) for a in expr.args}}
        callee = self.names.callee(expr)
        if callee is not None and not callee.startswith(":"):
            return {
                "k": "call",
                "fn": callee,
                "kind": self.values.kind(expr).value,
                "args": [self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is None and not a.star],
                "kwargs": {a.keyword.value: self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is not None},
                "bound": self.names.bound(expr, callee),
                "star": any(a.star for a in expr.args),
                "site": self.names.site(expr),  # a DataLoader when it builds a subclass of one
            }
        target = self.index.target_of(expr)
        if target is not None and target.name.value not in ("__init__", "forward", "__call__"):
            returns = self.index.returns.get(target, [])
            inlined = absval.join_abs([self.abs_of(r, depth + 1) for r in returns]) if returns else {"k": "host"}
            qual = self.names.qual(target)
            if qual is not None and _mentions_parameters(inlined) and not any(a.star for a in expr.args):
                # `get_instance(models, "arch", cfg)`: what it returns depends on what *this*
                # call passes; the view reads its returns with these arguments
                return {
                    "k": "call",
                    "fn": f":{qual}",
                    "kind": self.values.kind(expr).value,
                    "args": [self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is None],
                    "kwargs": {a.keyword.value: self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is not None},
                    "bound": self.names.bound(expr, f":{qual}"),
                    "star": False,
                    "site": self.names.site(expr),
                }
            return inlined
        info = self.index.local_class(expr.func)
        if info is not None:
            return {
                "k": "instance",
                "cls": f"{self.names.relpath}:{expr.func.value}",
                "module": self.values.is_module_class(info.node),
                "args": [self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is None and not a.star],
                "kwargs": {a.keyword.value: self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is not None},
            }
        picked = self.callee_value(expr.func, depth) if callee is None else None
        if picked is not None:
            return {
                "k": "vcall",
                "of": picked,
                "kind": self.values.kind(expr).value,  # what the module alone says, if the view cannot
                "args": [self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is None and not a.star],
                "kwargs": {a.keyword.value: self.abs_of(a.value, depth + 1) for a in expr.args if a.keyword is not None},
            }
        qn = self.values.qualname(expr.func)
        kind = self.values.kind(expr)
        if qn is not None and kind is Kind.UNKNOWN:
            return {"k": "object", "origin": qn}  # `SummaryWriter(...)`: a library object
        return self.kind_or_device(expr)

    # -- loops and datasets ---------------------------------------------------------------------
    def unwrap(self, expr: cst.BaseExpression, depth: int = 0) -> cst.BaseExpression:
        """`enumerate(tqdm(loader))` -> `loader`; `pbar = tqdm(loader)` -> `loader`."""
        if depth > MAX_DEPTH:
            return expr
        if isinstance(expr, cst.Name):
            call = self.values._single_assigned_call(expr)  # noqa: SLF001
            if call is not None and self._wrapper_name(call) is not None:
                return self.unwrap(call, depth + 1)
        if isinstance(expr, cst.Call) and self._wrapper_name(expr) is not None:
            positional = [a.value for a in expr.args if a.keyword is None and not a.star]
            if positional:
                return self.unwrap(positional[0], depth + 1)
        return expr

    def _wrapper_name(self, call: cst.Call) -> str | None:
        name = self.values.qualname(call.func) or (call.func.value if isinstance(call.func, cst.Name) else None)
        return name if name in _WRAPPERS else None

    def sources(self, expr: cst.BaseExpression | None, depth: int = 0) -> list[dict]:
        """Every value ``expr`` may come from, as abstract values: through names, `self.attr`
        (each assignment in the class), this module's helpers' returns and `Subset`-style
        wrappers. Unlike ``abs_of`` nothing is joined: a dataset that is a parameter in one
        branch and built here in the other yields both."""
        if expr is None or depth > MAX_DEPTH:
            return []
        if isinstance(expr, cst.Name):
            out = []
            for d in self.values.reaching_defs(expr):
                if d.how == "assign" and d.value is not None:
                    out += self.sources(d.value, depth + 1)
                elif d.how == "param":  # `if transform is None: transform = ToTensor()` keeps the parameter too
                    found = self._param_value(d)
                    if found is not None:
                        out.append(found)
                elif d.how == "unpack" and d.value is not None:
                    element = literal_element(d)  # `a, b = A(...), B(...)`: that element's sources
                    out += self.sources(element, depth + 1) if element is not None else [self.abs_of(expr)]  # (`_, ds = build()`: its elem)
            if not out and self.abs_of(expr).get("k") == "sym":
                out.append(self.abs_of(expr))  # `transform=TRAIN_TRANSFORMS` imported: the view resolves it
            return out
        if isinstance(expr, cst.Attribute):
            parts = dotted_parts(expr)
            info = self.index.class_of(expr) if parts and len(parts) == 2 and parts[0] == "self" else None
            if info is None:
                return [self.abs_of(expr)]
            out = []
            for d in info.self_attrs.get(parts[1], []):
                if d.how == "assign" and d.value is not None:
                    out += self.sources(d.value, depth + 1)
            return out
        if isinstance(expr, cst.Call):
            target = self.index.target_of(expr)
            if target is not None and target not in self.index.class_of_method:
                out = []
                for r in self.index.returns.get(target, []):
                    out += self.sources(r, depth + 1)
                return out
            out = [self.abs_of(expr)]
            for wrapped in self.loaders._wrapped_datasets(expr):  # noqa: SLF001 - `Subset(ds, idx)`
                out += self.sources(wrapped, depth + 1)
            return out
        if isinstance(expr, cst.IfExp):  # `self.train_dataset if is_train else self.test_dataset`: either
            return self.sources(expr.body, depth + 1) + self.sources(expr.orelse, depth + 1)
        return [self.abs_of(expr)]
