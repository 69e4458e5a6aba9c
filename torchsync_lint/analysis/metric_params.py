"""Which metrics a function parameter holds: the parameter half of the metric tracker.

``MetricParameters`` is a mixin of ``MetricTracker`` (``analysis/metrics.py``), which provides
``sites_of``, ``container``, ``device_of`` and ``_defs``. A parameter is what its same-module
call sites pass when all of them agree (see ``_param_binding``); a function that may be called
where we cannot see its arguments (``_hidden_callers``) leaves its parameters unknown.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import Def
from torchsync_lint.analysis.metric_classes import _SAME_OBJECT_METHODS
from torchsync_lint.analysis.metric_sites import MetricSite, _unique
from torchsync_lint.analysis.values import LIGHTNING_BATCH_HOOKS


class MetricParameters:
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
        env = self.analysis.env
        remote = env.param_metrics(func, param) if what == "sites" else env.param_metric_dict(func, param)
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
            # A subclass that overrides it may reach it through `super()` with arguments we do
            # not follow; one that inherits it as it is calls it only where `Sub(...)` or
            # `sub.name(...)` is written, and those are call sites (index.resolve_function looks
            # methods up through the bases). Dispatched here from a base: hidden too.
            if name in other.methods and (self._inherits(other, info) or self._inherits(info, other)):
                return True
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
