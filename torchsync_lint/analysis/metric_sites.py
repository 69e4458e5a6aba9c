"""The units the metric tracker (``analysis/metrics.py``) works in: a metric's allocation site
(the constructor call `MeanMetric(...)`: its class, its settings, its `MetricCollection` members)
and a use of one (`update`, forward or `compute`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchsync_lint.analysis.metric_classes import _MISSING, UNKNOWN, MetricClass, literal


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


def _unique(sites: list[MetricSite]) -> list[MetricSite]:
    return list({id(s): s for s in sites}.values())
