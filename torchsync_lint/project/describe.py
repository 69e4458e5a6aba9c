"""torchmetrics metrics across modules: a metric built in one module (a `MeanMetric().to(device)`
in train.py) and updated in another (engine.py's loop) is described as plain data in the first
module's summary, and rebuilt as a metric site the second module's rules can read."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchsync_lint.analysis.metric_classes import KNOWN_CLASSES, UNKNOWN, MetricClass
from torchsync_lint.analysis.metrics import MetricSite

_UNKNOWN_VALUE = "?"  # a setting the user configures: unknown, never a finding


def describe_metric(tracker, site: MetricSite) -> dict:
    cls = site.cls
    keys = set(cls.params) | {k for k, _ in cls.defaults} | {"nan_strategy", "average", "task", "sync_on_compute"}
    settings = {}
    for key in sorted(keys):
        value = site.setting(key)
        settings[key] = _UNKNOWN_VALUE if value is UNKNOWN or not isinstance(value, (str, int, float, bool, type(None))) else value
    return {
        "k": "metric",
        "cls": cls.name,
        "family": cls.family,
        "settings": settings,
        "device": tracker.device_of(site) or "cpu",
        "overrides": sorted(cls.overrides),
        "weighted": cls.weighted,
        "bincount": cls.bincount_always,
        "task": cls.task,
    }


@dataclass(eq=False)
class RemoteMetricSite(MetricSite):
    """A metric built in another module: its class and settings as that module describes them.
    It has no constructor call here, so no fix edits it."""

    described: dict = field(default_factory=dict)

    def argument(self, key: str):
        return None

    def setting(self, key: str) -> object:
        value = self.described.get("settings", {}).get(key, _UNKNOWN_VALUE)
        return UNKNOWN if value == _UNKNOWN_VALUE else value



def remote_site(described: dict) -> RemoteMetricSite:
    known = KNOWN_CLASSES.get(described["cls"])
    cls = known or MetricClass(
        described["cls"], described.get("family", "custom"), (), (), described.get("task"), described.get("weighted", False), described.get("bincount", False)
    )
    cls = MetricClass(cls.name, cls.family, cls.params, cls.defaults, cls.task, cls.weighted, cls.bincount_always, frozenset(described.get("overrides", ())))
    return RemoteMetricSite(call=None, cls=cls, remote_device=described.get("device", "cpu"), described=described)  # type: ignore[arg-type]
