"""Which expressions hold torchmetrics metrics, of which class, configured how, and where they live.

Built once per module with ``metric_tracker(analysis)`` (an ``analysis.extension``). The unit of
tracking is the *allocation site*: the constructor call `MeanMetric(...)`. An expression
resolves to the set of sites it may hold, through names, `.to()`/`.cuda()` (which return the
same object), dict/list containers and their comprehensions, `c["key"]`, `for k, m in
c.items()` (narrowed by `if k != "key":` guards), `self.attr`, `MetricCollection` members, and
function parameters that every same-module call site binds to the same kind of metric (or
container of metrics): see ``MetricTracker._param_binding``, in ``metric_params``.

A site's device is flow-insensitive: a metric is an `nn.Module`, so `m.to(device)` anywhere moves
that object (even without rebinding); a metric assigned to `self.x` of a LightningModule, or of an
`nn.Module` that the module moves with `.to(<accelerator>)`/`.cuda()`, lives with the module.
A metric never moved stays on the CPU.

Constructor arguments are read as literals; a value the user configures (`nan_strategy=args.nan`,
`**metric_kwargs`) is ``UNKNOWN`` and no rule reports on it. Defaults come from torchmetrics 1.9.0
(`aggregation.py`, `classification/*.py`), kept in ``metric_classes``.

The tracker's parts: sites and uses (``metric_sites``), parameters (``metric_params``), uses,
moves and module facts (``metric_uses``); this module resolves classes, names and containers.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchsync_lint.analysis import dispatch

from torchsync_lint.analysis.index import Def
from torchsync_lint.analysis.metric_classes import (
    ANY_METHOD,
    _DIST_DEFAULTS,
    _ITEM_VIEWS,
    _SAME_OBJECT_METHODS,
    AGGREGATION_BASES,
    KNOWN_CLASSES,
    UNKNOWN,
    MetricClass,
    literal,
)
from torchsync_lint.analysis.metric_params import MetricParameters
from torchsync_lint.analysis.metric_sites import MetricSite, MetricUse, _unique
from torchsync_lint.analysis.metric_uses import MetricUses
from torchsync_lint.knowledge.libraries import LIBRARY_ROOTS
from torchsync_lint.pytree import evaluated_literal


class MetricTracker(MetricUses, MetricParameters):
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self.values = analysis.values
        self.sites: dict[cst.Call, MetricSite] = {}
        self._class_memo: dict[str, MetricClass | None] = {}
        self._resolving: set[int] = set()
        self._subscript_assigns: list[tuple[cst.Assign, cst.Subscript]] = []
        self.deterministic = False
        self.nccl_inits: list[cst.Call] = []
        self.uses: dict[cst.Call, MetricUse] = {}
        self._moves: dict[int, set[str]] = {}
        # Parameters (see `_param_binding`): results, those being computed, and which of those a
        # computation leaned on (a result that leaned on an unfinished one is not memoised).
        self._param_memo: dict[tuple[str, int], object] = {}  # raw bindings (see `_param_raw`)
        self._param_pending: set[tuple[str, int]] = set()
        self._param_hits: list[set[tuple[str, int]]] = []
        self._params_know_devices = False
        self._escaped_names: set[str] = set()
        self._escaped_attrs: set[str] = set()
        self._unresolved_names: set[str] | None = None
        # Whether another module passes a metric in is asked only where it decides (it resolves
        # every parameter of the module's functions): not of a module that builds its own.
        may_build = self.index.imports.imports_module("torchmetrics") or self._imports_project_metrics()
        if not may_build and not analysis.env.has_remote_metrics():
            return  # no metric can be constructed in this module, nor is one passed in
        self._scan_module()
        for call in self.index.calls:
            self._site_of_call(call)
        if not self.sites and may_build and not analysis.env.has_remote_metrics():
            return
        self._moves = self._find_moves()
        # From here on a parameter's call sites must also agree on where the metric lives.
        self._params_know_devices = True
        self._param_memo.clear()
        self._find_uses()

    # -- classes --------------------------------------------------------------------------
    def metric_class(self, func: cst.BaseExpression) -> MetricClass | None:
        """The metric class a callee names: a torchmetrics class (any alias) or a local subclass."""
        qn = self.analysis.qualname(func)
        if qn is not None:
            if qn.split(".")[0] != "torchmetrics":
                return self._project_class(qn)
            return KNOWN_CLASSES.get(qn.rsplit(".", 1)[-1])
        if self.index.local_class(func) is not None:
            return self._local_class(func.value)
        if isinstance(func, cst.Name):
            return self._factory_class(func)
        return None

    def _imports_project_metrics(self) -> bool:
        """Does the module import a metric class of another project module?"""
        env = self.analysis.env
        return any(env.metric_base(qn) is not None for qn in sorted(set(self.index.imports.aliases.values())) if qn.split(".")[0] not in LIBRARY_ROOTS)

    def _project_class(self, qualname: str) -> MetricClass | None:
        """A metric class of another project module (`class WordErrorRate(ErrorRate)` with
        `ErrorRate(Metric)`): its torchmetrics base, with every method it defines overridden."""
        found = self.analysis.env.metric_base(qualname)
        if found is None:
            return None
        base_name, methods = found
        base = KNOWN_CLASSES.get(base_name.rsplit(".", 1)[-1])
        if base is None or base.family == "collection":
            return None
        return replace(base, name=f"{qualname.rsplit('.', 1)[-1]}({base.name})", overrides=base.overrides | frozenset(methods))

    def _factory_class(self, name: cst.Name, depth: int = 0) -> MetricClass | None:
        """A metric class made by a call: `Fast = functools.partial(MeanMetric, nan_strategy=...)`,
        `type("Fast", (MeanMetric,), {...})`, or a class decorator `NoNan = f(MeanMetric)`."""
        defs = self.values.reaching_defs(name)
        if len(defs) != 1 or defs[0].how != "assign" or not isinstance(defs[0].value, cst.Call) or depth > 3:
            return None
        call = defs[0].value
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        qn = self.analysis.qualname(call.func) or ""
        if qn == "functools.partial" and positional:
            base = self.metric_class(positional[0])
            if base is None or len(positional) > 1 or any(a.star for a in call.args):
                return None if base is None else replace(base, overrides=base.overrides | {"__init__"})
            preset = tuple((a.keyword.value, a) for a in call.args if a.keyword is not None)
            return replace(base, preset=base.preset + preset)
        if isinstance(call.func, cst.Name) and call.func.value == "type" and len(positional) == 3 and not self.index.binds_locally("type", call):
            bases = [el.value for el in positional[1].elements] if isinstance(positional[1], cst.Tuple) else []
            base = self.metric_class(bases[0]) if bases else None
            if base is None:
                return None
            body = positional[2]
            if isinstance(body, cst.Dict) and all(isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) for el in body.elements):
                methods = frozenset(evaluated_literal(el.key) for el in body.elements)
            else:
                methods = frozenset({ANY_METHOD})
            return replace(base, name=f"{literal(positional[0]) if literal(positional[0]) is not UNKNOWN else 'type'}({base.name})", overrides=base.overrides | methods)
        for arg in positional:  # `NoNan = suppress_nan_check(MeanMetric)`: a class decorator
            base = self.metric_class(arg)
            if base is not None:
                return replace(base, overrides=base.overrides | {ANY_METHOD})
        return None

    def _local_class(self, name: str, depth: int = 0) -> MetricClass | None:
        if name in self._class_memo:
            return self._class_memo[name]
        self._class_memo[name] = None  # recursion guard
        info = self.index.classes[name]
        result = None
        for base in info.bases:
            parent = None
            qn = self.analysis.qualname(base)
            if qn is not None and qn.split(".")[0] == "torchmetrics" and qn.rsplit(".", 1)[-1] in AGGREGATION_BASES:
                parent = MetricClass("BaseAggregator", "aggregation", ("fn", "default_value", "nan_strategy"), (("nan_strategy", "error"), *_DIST_DEFAULTS))
            elif depth < 5:
                parent = self.metric_class(base)
            if parent is not None and parent.family != "collection":
                result = MetricClass(
                    f"{name}({parent.name})", parent.family, parent.params, parent.defaults, parent.task, parent.weighted,
                    parent.bincount_always, parent.overrides | frozenset(info.methods),
                )
                break
        self._class_memo[name] = result
        return result

    # -- sites ----------------------------------------------------------------------------
    def _site_of_call(self, call: cst.Call) -> MetricSite | None:
        if call in self.sites:
            return self.sites[call]
        cls = self.metric_class(call.func)
        if cls is None:
            return None
        site = MetricSite(call, cls)
        self.sites[call] = site
        if cls.family == "collection" and call.args and call.args[0].keyword is None:
            first = call.args[0].value
            members: list[MetricSite] = []
            container = self.container(first)
            if container is not None:
                for group in container.values():
                    members += group
            else:
                members += self.sites_of(first)
            for extra in call.args[1:]:  # MetricCollection(m1, m2, ...)
                if extra.keyword is None and not extra.star:
                    members += self.sites_of(extra.value)
            site.members = list({id(m): m for m in members}.values())
        return site

    def sites_of(self, expr: cst.BaseExpression) -> list[MetricSite]:
        """The metric sites ``expr`` may hold (empty when it holds none we know of)."""
        key = id(expr)
        if key in self._resolving:
            return []
        self._resolving.add(key)
        try:
            return _unique(self._sites_of(expr))
        finally:
            self._resolving.discard(key)

    def _sites_of(self, expr: cst.BaseExpression) -> list[MetricSite]:
        if isinstance(expr, cst.Call):
            site = self._site_of_call(expr)
            if site is not None:
                return [site]
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_OBJECT_METHODS:
                return self.sites_of(expr.func.value)
            return []
        if isinstance(expr, cst.Name):
            out: list[MetricSite] = []
            for d in self._defs(expr):
                out += self._def_sites(d, expr)
            return out
        if isinstance(expr, cst.Attribute):
            return [s for value in self._self_attr_values(expr) for s in self.sites_of(value)]
        if isinstance(expr, cst.Subscript):
            container = self.container(expr.value)
            if container is None:
                return []
            key = _subscript_key(expr)
            if key is UNKNOWN:
                return [s for group in container.values() for s in group]
            return list(container.get(key, []))
        if isinstance(expr, cst.IfExp):
            return self.sites_of(expr.body) + self.sites_of(expr.orelse)
        if isinstance(expr, cst.NamedExpr):
            return self.sites_of(expr.value)
        return []

    def _defs(self, name: cst.Name) -> list[Def]:
        # A binding whose statement contains the use is evaluated before it binds (`m = {k: m.to(d) ...}`).
        defs = [d for d in self.values.reaching_defs(name) if not self._contains(d.stmt, name)]
        # Inside `for ... name ... in it:` the loop binding kills every other one (unless the body rebinds).
        loop = self._binding_loop(name)
        if loop is not None:
            defs = [d for d in defs if d.stmt is loop or self.index.inside(d.stmt, loop.body)]
        # A comprehension's variable exists only inside it (the index folds it into the scope).
        return [d for d in defs if not isinstance(d.stmt, cst.CompFor) or self._inside_comprehension(name, d.stmt)]

    def _binding_loop(self, name: cst.Name) -> cst.For | None:
        """The innermost `for` loop (in the same function) whose target binds ``name``, if ``name`` is in its body."""
        child: cst.CSTNode = name
        for anc in self.index.ancestors(name):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, cst.For) and child is anc.body and _binds(anc.target, name.value):
                return anc
            child = anc
        return None

    def _inside_comprehension(self, node: cst.CSTNode, comp_for: cst.CompFor) -> bool:
        comp = next((a for a in self.index.ancestors(comp_for) if not isinstance(a, cst.CompFor)), None)
        return comp is not None and self.index.inside(node, comp)

    def _contains(self, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
        if isinstance(outer, (cst.For, cst.CompFor)):
            outer = outer.iter  # the loop variable is bound for the whole body
            return node is outer or self.index.inside(node, outer)
        if isinstance(outer, cst.FunctionDef):
            return False
        return self.index.inside(node, outer)

    def _def_sites(self, d: Def, use: cst.Name) -> list[MetricSite]:
        if d.how == "assign" and d.value is not None:
            return self.sites_of(d.value)
        if d.how == "param":
            return self._param_binding(d, "sites") or []
        if d.how == "for" and d.value is not None:
            return self._element_sites(d, use)
        if d.how == "module-move" and isinstance(d.stmt, cst.Expr) and isinstance(d.stmt.value, cst.Call):
            # `avg.to(device)` as a statement moves the same object: follow the receiver.
            receiver = d.stmt.value.func.value if isinstance(d.stmt.value.func, cst.Attribute) else None
            return self.sites_of(receiver) if isinstance(receiver, cst.Name) else []
        return []

    def _element_sites(self, d: Def, use: cst.Name) -> list[MetricSite]:
        """Metrics bound by `for m in c.values()`, `for k, m in c.items()`, `for m in [a, b]`."""
        iterable = d.value
        container = None
        key_var = None
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and iterable.func.attr.value in _ITEM_VIEWS:
            if iterable.func.attr.value == "items":
                if d.path != (1,):
                    return []  # the key, not the metric
                key_var = _key_variable(d.stmt)
            elif d.path != ():
                return []
            container = self.container(iterable.func.value)
        elif d.path == ():
            container = self.container(iterable)
            if container is not None and not all(isinstance(k, int) for k in container):
                return []  # iterating a dict (or a MetricCollection) yields its keys
        if container is None:
            return []
        keys = set(container)
        if key_var is not None:
            keys = self._guard_keys(use, d.stmt, key_var, keys)
        return [s for k in container if k in keys for s in container[k]]  # in the container's order

    def _guard_keys(self, use: cst.CSTNode, loop: cst.CSTNode, key_var: str, keys: set) -> set:
        """Narrow keys by `if name != "avg_loss":` / `if name == "acc":` between the loop and the use."""
        child = use
        for anc in self.index.ancestors(use):
            if anc is loop:
                break
            if isinstance(anc, cst.If):
                in_body = child is anc.body
                test = anc.test
                if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name) and test.left.value == key_var:
                    comp = test.comparisons[0]
                    value = literal(comp.comparator)
                    options = {value} if value is not UNKNOWN else None
                    if isinstance(comp.comparator, (cst.Tuple, cst.List, cst.Set)):
                        options = {literal(el.value) for el in comp.comparator.elements}
                    if options is not None and UNKNOWN not in options and (in_body or child is anc.orelse):
                        positive = isinstance(comp.operator, (cst.Equal, cst.In))
                        if not in_body:
                            positive = not positive
                        keys = {k for k in keys if (k in options) == positive}
            child = anc
        return keys

    def _self_attr_values(self, expr: cst.Attribute) -> list[cst.BaseExpression]:
        """Values assigned to `self.x` in the class of `self.x` or of `model.x` (`model = Net()`)."""
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            info = self.index.class_of(expr)
        else:
            cls_name = self._instance_class(expr.value)
            info = self.index.classes.get(cls_name) if cls_name is not None else None
        if info is None:
            return []
        return [d.value for d in dispatch.field_stores(self.index, info, expr.attr.value) if d.how == "assign" and d.value is not None]

    # -- containers -----------------------------------------------------------------------
    def container(self, expr: cst.BaseExpression, depth: int = 0) -> dict[object, list[MetricSite]] | None:
        """A dict/list of metrics: key -> sites (UNKNOWN keys kept apart); None when not one."""
        if depth > 6:
            return None
        if isinstance(expr, cst.Dict):
            out: dict[object, list[MetricSite]] = {}
            for el in expr.elements:
                if isinstance(el, cst.DictElement):
                    key = literal(el.key)
                    out.setdefault(key if key is not UNKNOWN else ("?", id(el)), []).extend(self.sites_of(el.value))
            return out if any(out.values()) else None
        if isinstance(expr, (cst.List, cst.Tuple)):
            out = {i: self.sites_of(el.value) for i, el in enumerate(expr.elements) if not isinstance(el, cst.StarredElement)}
            return out if any(out.values()) else None
        if isinstance(expr, cst.DictComp):
            return self._comprehension(expr, depth)
        if isinstance(expr, cst.Call):
            site = self._site_of_call(expr)
            if site is not None and site.cls.family == "collection":
                return {("member", i): [m] for i, m in enumerate(site.members)} or None
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_OBJECT_METHODS:
                return self.container(expr.func.value, depth + 1)
            if isinstance(expr.func, cst.Name) and expr.func.value == "dict":
                out = {a.keyword.value: self.sites_of(a.value) for a in expr.args if a.keyword is not None}
                return out if any(out.values()) else None
            return None
        if isinstance(expr, cst.Name):
            merged: dict[object, list[MetricSite]] = {}
            found = False
            for d in self._defs(expr):
                part = None
                if d.how == "param":
                    part = self._param_binding(d, "container")
                elif d.how == "assign" and d.value is not None:
                    part = self.container(d.value, depth + 1)
                if part is not None:
                    found = True
                    for k, v in part.items():
                        merged.setdefault(k, []).extend(v)
            for assign, target in self._subscript_assigns:
                if isinstance(target.value, cst.Name) and target.value.value == expr.value and self.index.frame_of(assign) is self.index.frame_of(expr) and self.index.seq(assign) <= self.index.seq(expr):
                    key = _subscript_key(target)
                    if key is not UNKNOWN:
                        merged[key] = self.sites_of(assign.value)  # `metrics["avg_loss"] = Other()` replaces
                        found = True
            return merged if found else None
        if isinstance(expr, cst.Attribute):
            merged = {}
            for value in self._self_attr_values(expr):
                part = self.container(value, depth + 1)
                for k, v in (part or {}).items():
                    merged.setdefault(k, []).extend(v)
            return merged or None
        return None

    def _comprehension(self, comp: cst.DictComp, depth: int) -> dict[object, list[MetricSite]] | None:
        """`{k: m.to(device) for k, m in metrics.items()}` keeps the keys and the objects."""
        loop = comp.for_in
        it = loop.iter
        if loop.inner_for_in is not None or not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items"):
            return None
        if not (isinstance(loop.target, cst.Tuple) and len(loop.target.elements) == 2):
            return None
        key_t, value_t = (el.value for el in loop.target.elements)
        source = self.container(it.func.value, depth + 1)
        if source is None or not isinstance(value_t, cst.Name):
            return None
        value = comp.value
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _SAME_OBJECT_METHODS:
            value = value.func.value
        if not (isinstance(value, cst.Name) and value.value == value_t.value):
            return None
        if isinstance(comp.key, cst.Name) and isinstance(key_t, cst.Name) and comp.key.value == key_t.value:
            if loop.ifs:
                return None  # a filtered comprehension: keep it simple, know nothing
            return {k: source[k] for k in source}
        return None


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(el.value, name) for el in target.elements)
    return False


def _subscript_key(node: cst.Subscript) -> object:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return UNKNOWN
    return literal(node.slice[0].slice.value)


def _key_variable(stmt: cst.CSTNode) -> str | None:
    target = getattr(stmt, "target", None)
    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name):
        return target.elements[0].value.value
    return None


def metric_tracker(analysis) -> MetricTracker:
    return analysis.extension("metrics", MetricTracker)
