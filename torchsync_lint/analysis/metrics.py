"""Which expressions hold torchmetrics metrics, of which class, configured how, and where they live.

Built once per module with ``metric_tracker(analysis)`` (an ``analysis.extension``). The unit of
tracking is the *allocation site*: the constructor call `MeanMetric(...)`. An expression
resolves to the set of sites it may hold, through names, `.to()`/`.cuda()` (which return the
same object), dict/list containers and their comprehensions, `c["key"]`, `for k, m in
c.items()` (narrowed by `if k != "key":` guards), `self.attr`, `MetricCollection` members, and
function parameters that every same-module call site binds to the same kind of metric (or
container of metrics): see ``MetricTracker._param_binding``.

A site's device is flow-insensitive: a metric is an `nn.Module`, so `m.to(device)` anywhere moves
that object (even without rebinding); a metric assigned to `self.x` of a LightningModule, or of an
`nn.Module` that the module moves with `.to(<accelerator>)`/`.cuda()`, lives with the module.
A metric never moved stays on the CPU.

Constructor arguments are read as literals; a value the user configures (`nan_strategy=args.nan`,
`**metric_kwargs`) is ``UNKNOWN`` and no rule reports on it. Defaults come from torchmetrics 1.9.0
(`aggregation.py`, `classification/*.py`), kept in ``metric_classes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import Def
from torchsync_lint.analysis.metric_classes import (
    ANY_METHOD,
    _DIST_DEFAULTS,
    _MISSING,
    _ITEM_VIEWS,
    _SAME_OBJECT_METHODS,
    AGGREGATION_BASES,
    KNOWN_CLASSES,
    UNKNOWN,
    MetricClass,
    literal,
)
from torchsync_lint.analysis.values import LIGHTNING_BATCH_HOOKS


@dataclass(eq=False)
class MetricSite:
    """One constructor call of a metric (an allocation site)."""

    call: cst.Call
    cls: MetricClass
    members: list[MetricSite] = field(default_factory=list)  # MetricCollection members
    remote_device: str | None = None  # a metric built in another module: where it lives there

    def argument(self, key: str) -> cst.Arg | None:
        positional = [a for a in self.call.args if a.keyword is None and not a.star]
        for arg in self.call.args:
            if arg.keyword is not None and arg.keyword.value == key:
                return arg
        for preset_key, arg in self.cls.preset:  # `functools.partial(MeanMetric, nan_strategy=...)`
            if preset_key == key:
                return arg
        if key in self.cls.params:
            i = self.cls.params.index(key)
            if i < len(positional):
                return positional[i]
        return None

    def setting(self, key: str) -> object:
        """The literal value of a constructor argument (or its default); UNKNOWN if configured."""
        arg = self.argument(key)
        if arg is not None:
            return literal(arg.value)
        if any(a.star for a in self.call.args):
            return UNKNOWN  # `**kwargs` may set it
        if key == "nan_strategy" and self.cls.redefines("__init__"):
            return UNKNOWN  # a user subclass may pass its own default
        default = self.cls.default(key)
        return UNKNOWN if default is _MISSING else default

    @property
    def task(self) -> object:
        return self.cls.task if self.cls.task is not None else self.setting("task")

    @property
    def label(self) -> str:
        return self.cls.name

    def leaves(self) -> list[MetricSite]:
        return [m for member in self.members for m in member.leaves()] if self.cls.family == "collection" else [self]


@dataclass(frozen=True)
class MetricUse:
    """`m.update(...)`, `m(...)` (forward: an update plus a batch compute) or `m.compute()`."""

    call: cst.Call
    kind: str  # "update" | "forward" | "compute"
    receiver: cst.BaseExpression
    sites: tuple  # in source order, so that messages naming "the" metric are the same every run

    @property
    def leaves(self) -> list[MetricSite]:
        seen: dict[int, MetricSite] = {}
        for site in self.sites:
            for leaf in site.leaves():
                seen.setdefault(id(leaf), leaf)
        return list(seen.values())


class MetricTracker:
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
        remote = analysis.env.has_remote_metrics()
        if not self.index.imports.imports_module("torchmetrics") and not remote:
            return  # no metric can be constructed in this module, nor is one passed in
        self._scan_module()
        for call in self.index.calls:
            self._site_of_call(call)
        if not self.sites and not remote:
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
                return None
            return KNOWN_CLASSES.get(qn.rsplit(".", 1)[-1])
        if isinstance(func, cst.Name) and func.value in self.index.classes:
            return self._local_class(func.value)
        if isinstance(func, cst.Name):
            return self._factory_class(func)
        return None

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
                methods = frozenset(el.key.evaluated_value for el in body.elements)
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
        return [d.value for d in info.self_attrs.get(expr.attr.value, []) if d.how == "assign" and d.value is not None]

    # -- parameters -----------------------------------------------------------------------
    def _param_binding(self, d: Def, what: str):
        """The metrics (``what="sites"``: a list, empty when unknown) or the container of metrics
        (``"container"``: a dict, None when unknown) that parameter ``d`` is bound to.

        Like the value analysis, a parameter is what its same-module call sites pass, but all of
        them must agree: every call site passes a tracked metric (by position or keyword, the
        default when omitted), and all the metrics passed have one class, one configuration and
        (once devices are known) one device. One call site that passes something else, a
        `*args`/`**kwargs` call, a function that may be called where we cannot see it, or two
        different metrics: the parameter is unknown, and unknown is never a finding.
        """
        raw = self._param_raw(d, what)
        if raw is _BOTTOM or raw is _UNBOUND:
            return [] if what == "sites" else None
        return _copy(raw)

    def _param_raw(self, d: Def, what: str):
        """``_BOTTOM`` (only recursion reaches it so far), ``_UNBOUND``, or the binding.

        Recursion terminates and is exact: a parameter whose binding is being computed is
        ``_BOTTOM`` to a call site that passes it on (`f(m, n - 1)` inside `f`, or `g(m)` when `g`
        calls `f(m)` back), and a result that leaned on such an unfinished binding is not
        memoised (it is recomputed when asked for on its own). ``_UNBOUND`` is final: more call
        sites can only add disagreement.
        """
        key = (what, id(d.param))
        if key in self._param_memo:
            return self._param_memo[key]
        if key in self._param_pending:
            if self._param_hits:
                self._param_hits[-1].add(key)
            return _BOTTOM
        if len(self._param_pending) >= _MAX_PARAM_DEPTH:
            return _UNBOUND  # a chain of calls this deep: give up rather than exhaust the stack
        self._param_pending.add(key)
        self._param_hits.append(set())
        try:
            result = self._param_uncached(d, what)
        finally:
            hits = self._param_hits.pop()
            self._param_pending.discard(key)
        hits.discard(key)  # self-recursion only: the result is already the fixed point
        if self._param_hits:
            self._param_hits[-1] |= hits
        if not hits or result is _UNBOUND:
            self._param_memo[key] = result
        return result

    def _param_uncached(self, d: Def, what: str):
        func, param = d.func, d.param
        assert func is not None and param is not None
        if self._hidden_callers(func):
            return _UNBOUND
        passed: list = []
        recursive = False
        remote = self.analysis.env.param_metrics(func, param) if what == "sites" else None
        if remote:
            passed.append(remote)  # what call sites in other modules of the project pass
        for call in self.index.call_sites(func):
            expr = self.index.argument_for(call, func, param)
            if expr is None:
                return _UNBOUND
            forwarded = self._forwarded_params(expr)
            if forwarded is not None:  # `f(m)` where `m` is a parameter of the caller: its binding
                for raw in (self._param_raw(p, what) for p in forwarded):
                    if raw is _UNBOUND:
                        return _UNBOUND
                    if raw is _BOTTOM:
                        recursive = True
                    else:
                        passed.append(raw)
                continue
            value = self.sites_of(expr) if what == "sites" else self.container(expr)
            if not value:
                return _UNBOUND  # something we do not track: never guess
            passed.append(value)
        if not passed:
            return _BOTTOM if recursive else _UNBOUND  # never called here
        if what == "sites":
            sites = _unique([s for value in passed for s in value])
            return sites if len({self._signature(s) for s in sites}) == 1 else _UNBOUND
        merged: dict[object, list[MetricSite]] = {}
        for value in passed:
            for k, group in value.items():
                merged.setdefault(k, []).extend(group)
        for k, group in merged.items():
            merged[k] = _unique(group)
            if len({self._signature(s) for s in merged[k]}) > 1:
                return _UNBOUND  # one key, metrics of different kinds
        return merged

    def _forwarded_params(self, expr: cst.BaseExpression) -> list[Def] | None:
        """The parameter definitions ``expr`` reads when it is just a parameter (`m`, `m.to(d)`)."""
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_OBJECT_METHODS:
            expr = expr.func.value
        if not isinstance(expr, cst.Name):
            return None
        defs = self._defs(expr)
        return defs if defs and all(d.how == "param" for d in defs) else None

    def _signature(self, site: MetricSite) -> tuple:
        """Everything a rule reads from a metric: class, settings, distributed options, device."""
        leaves = site.leaves() if site.cls.family == "collection" else []
        return (
            site.cls,
            tuple(site.setting(k) for k in _SIGNATURE_SETTINGS),
            tuple(site.argument(k) is not None for k in _DIST_OPTIONS),
            self.device_of(site) if self._params_know_devices else None,
            tuple(self._signature(leaf) for leaf in leaves),
        )

    def _hidden_callers(self, func: cst.FunctionDef) -> bool:
        """May ``func`` be called from code whose arguments we cannot see?"""
        name = func.name.value
        for dec in func.decorators:
            qn = self.analysis.qualname(dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator) or ""
            parts = dotted_parts(dec.decorator) or []
            if not qn.startswith("torch.") and parts not in (["staticmethod"], ["classmethod"]):
                return True  # a registry or wrapper may call it with anything
        info = self.index.class_of_method.get(func)
        if info is None:
            return name in self._escaped_names  # `optimizer.step(closure)`, `partial(f, ...)`, `g = f`
        if name in self._escaped_attrs or name in _IMPLICITLY_CALLED or (name.startswith("__") and name != "__init__"):
            return True  # `hook = self.step`; `model(x)` calls `forward`, Lightning calls its hooks
        if name == "__init__" and info.node.name.value in self._escaped_names:
            return True  # `factory = Trainer`, `partial(Trainer, ...)`: instantiated where we cannot see
        for other in self.index.classes.values():
            if other is info:
                continue
            if self._inherits(other, info) or (name in other.methods and self._inherits(info, other)):
                return True  # inherited or reached through `super()`, or dispatched here from a base
        return name in self._unresolved_method_calls()  # `x.step(m)` on a receiver we could not resolve

    def _unresolved_method_calls(self) -> set[str]:
        """Names of `x.name(...)` calls that resolve to no method of this module (`super()` aside:
        it reaches a local method only from a local subclass, which `_hidden_callers` rules out)."""
        if self._unresolved_names is None:
            targets = self.index.call_targets()
            self._unresolved_names = {
                call.func.attr.value
                for call in self.index.calls
                if isinstance(call.func, cst.Attribute) and call not in targets
                and not (isinstance(call.func.value, cst.Call) and dotted_parts(call.func.value.func) == ["super"])
            }
        return self._unresolved_names

    def _inherits(self, cls, base, depth: int = 0) -> bool:
        """Does local class ``cls`` derive from local class ``base``?"""
        if depth > 5:
            return False
        for b in cls.bases:
            parent = self.index.classes.get(b.value) if isinstance(b, cst.Name) else None
            if parent is base or (parent is not None and self._inherits(parent, base, depth + 1)):
                return True
        return False

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

    # -- uses, moves, module facts ---------------------------------------------------------
    def _find_uses(self) -> None:
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("update", "compute", "forward"):
                sites = self.sites_of(func.value)
                if sites:
                    kind = {"update": "update", "compute": "compute", "forward": "forward"}[func.attr.value]
                    self.uses[call] = MetricUse(call, kind, func.value, tuple(sites))
            elif not isinstance(func, cst.Name) or func.value not in self.index.classes:
                if self._site_of_call(call) is not None:
                    continue  # a constructor
                sites = self.sites_of(func)
                if sites:
                    self.uses[call] = MetricUse(call, "forward", func, tuple(sites))

    def _find_moves(self) -> dict[int, set[str]]:
        """Site id -> destinations of `.to()`/`.cuda()`/`.cpu()` applied to it (or a container of it)."""
        moves: dict[int, set[str]] = {}
        moved_classes: set[str] = set()
        for call in self.index.calls:
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda", "cpu"):
                continue
            where = {"cuda": "accelerator", "cpu": "cpu"}.get(func.attr.value) or self.values.to_destination(call)
            if where is None:
                continue
            targets = self.sites_of(func.value)
            container = self.container(func.value)
            if container:
                targets += [s for group in container.values() for s in group]
            for site in targets:
                for leaf in [site, *site.leaves()]:
                    moves.setdefault(id(leaf), set()).add(where)
            cls_name = self._instance_class(func.value)
            if cls_name is not None and where == "accelerator":
                moved_classes.add(cls_name)
        # Metrics that are attributes of a module move with it.
        for info in self.index.classes.values():
            lightning = self.values.is_lightning_class(info.node)
            if not (lightning or info.node.name.value in moved_classes) or not self.values.is_module_class(info.node):
                continue
            for defs in info.self_attrs.values():
                for d in defs:
                    if d.how != "assign" or d.value is None:
                        continue
                    sites = self.sites_of(d.value)
                    container = self.container(d.value)
                    if container:
                        sites += [s for group in container.values() for s in group]
                    for site in sites:
                        for leaf in [site, *site.leaves()]:
                            moves.setdefault(id(leaf), set()).add("accelerator")
        return moves

    def _instance_class(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """`Net()` / `model` bound to `Net(...)`: the local class name it instantiates."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Name) and expr.func.value in self.index.classes:
                return expr.func.value
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_OBJECT_METHODS:
                return self._instance_class(expr.func.value, depth + 1)
            return None
        if isinstance(expr, cst.Name):
            names = {self._instance_class(d.value, depth + 1) for d in self.values.reaching_defs(expr) if d.how == "assign" and d.value is not None}
            names.discard(None)
            return names.pop() if len(names) == 1 else None
        return None

    def device_of(self, site: MetricSite) -> str | None:
        """"device" when the metric is moved to an accelerator, "cpu" when it never is."""
        if site.remote_device is not None:
            return site.remote_device
        where = self._moves.get(id(site), set())
        if "accelerator" in where:
            return "device" if self.values.uses_accelerator else "cpu"
        return "cpu"

    def _scan_module(self) -> None:
        """One look at the module's nodes (from the index, no traversal of its own): subscript
        stores, functions referenced other than as a callee, determinism and NCCL set-up."""
        index = self.index
        for node in index.nodes_of(cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Subscript):
                    self._subscript_assigns.append((node, t.target))
        callees: set[int] = set()
        for node in index.calls:
            callees.add(id(node.func))
            qn = self.analysis.qualname(node.func) or ""
            if qn == "torch.use_deterministic_algorithms" and node.args and literal(node.args[0].value) is True:
                self.deterministic = True
            if qn == "torch.distributed.init_process_group" and _backend_is_nccl(node):
                self.nccl_inits.append(node)
        # A function referenced other than as a callee (`optimizer.step(closure)`,
        # `partial(f, m)`, `hook = self.step`) may be called with arguments we cannot see.
        # Names that define or label (def/class/parameter names, keywords, attribute names,
        # anything in an import) are not references.
        not_references: set[int] = set()
        for node_type in (cst.FunctionDef, cst.ClassDef, cst.Param):
            not_references.update(id(n.name) for n in index.nodes_of(node_type))
        not_references.update(id(n.keyword) for n in index.nodes_of(cst.Arg) if n.keyword is not None)
        for node in index.nodes_of(cst.Attribute):
            not_references.add(id(node.attr))
            if id(node) not in callees:
                self._escaped_attrs.add(node.attr.value)
        for node_type in (cst.Import, cst.ImportFrom):
            for stmt in index.nodes_of(node_type):
                not_references.update(id(n) for n in index.tree.walk_subtree(stmt) if isinstance(n, cst.Name))
        for node in index.nodes_of(cst.Name):
            if id(node) not in callees and id(node) not in not_references:
                self._escaped_names.add(node.value)

    def computed_sites(self) -> set[int]:
        """Ids of sites whose `compute()` runs somewhere (directly or through a collection),
        or that a LightningModule logs (`self.log(name, metric)` computes it at epoch end)."""
        out: set[int] = set()
        for use in self.uses.values():
            if use.kind == "compute":
                for site in use.sites:
                    out.add(id(site))
                    out.update(id(leaf) for leaf in site.leaves())
        for call in self.index.calls:
            parts = dotted_parts(call.func)
            if parts in (["self", "log"], ["self", "log_dict"]):
                for arg in call.args:
                    for site in self.sites_of(arg.value):
                        out.add(id(site))
                        out.update(id(leaf) for leaf in site.leaves())
        return out


def _backend_is_nccl(call: cst.Call) -> bool:
    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "backend"), None)
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        arg = positional[0] if positional else None
    if arg is None:
        return False  # default: "cpu:gloo,cuda:nccl" - CPU tensors go through gloo
    value = arg.value
    options = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
    for option in options:
        text = literal(option)
        if isinstance(text, str) and text.strip().lower() == "nccl":
            return True
        if (not isinstance(option, cst.SimpleString)) and isinstance(option, (cst.Attribute,)):
            parts = dotted_parts(option)
            if parts and parts[-1] == "NCCL" and "Backend" in parts:
                return True
    return False


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


def _unique(sites: list[MetricSite]) -> list[MetricSite]:
    return list({id(s): s for s in sites}.values())


class _Binding:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_MAX_PARAM_DEPTH = 24  # parameters resolved inside one another (call chains are a few deep)
_BOTTOM = _Binding("BOTTOM")  # a parameter reached only through recursion (so far)
_UNBOUND = _Binding("UNBOUND")  # a parameter whose call sites do not agree on a tracked metric


def _copy(binding):
    """A memoised parameter binding, safe for the caller to extend."""
    if isinstance(binding, dict):
        return {k: list(v) for k, v in binding.items()}
    return list(binding) if binding is not None else None


# What two metrics passed to one parameter must agree on (what the rules read from a site).
_SIGNATURE_SETTINGS = ("nan_strategy", "average", "top_k", "multidim_average", "sync_on_compute", "task", "validate_args")
_DIST_OPTIONS = ("process_group", "dist_sync_fn", "distributed_available_fn")
# Methods that something other than the visible call sites calls: `module(x)` runs `forward`,
# Lightning runs its hooks.
_IMPLICITLY_CALLED = frozenset({"forward", *LIGHTNING_BATCH_HOOKS, "on_train_epoch_end", "on_validation_epoch_end", "on_test_epoch_end"})


def metric_tracker(analysis) -> MetricTracker:
    return analysis.extension("metrics", MetricTracker)
