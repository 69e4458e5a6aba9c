"""What torchsync-lint knows of torchmetrics itself: classes, their constructor parameters and
defaults (read from torchmetrics 1.9.0: `aggregation.py`, `classification/*.py`), literals, and
which torchmetrics release the linted code targets (TSL203).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchsync_lint.installed import installed_torchmetrics_version
from torchsync_lint.pytree import evaluated_literal


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()  # a value the user configures, or one we cannot read

# The first torchmetrics release with Lightning-AI/torchmetrics#2943 (`MeanMetric.update`'s
# `weight=None` -> `torch.ones_like(value)`, and `nan_strategy="disable"`): 1.6.2. Checked by
# reading `aggregation.py` of the 1.6.1 and 1.6.2 wheels (see docs/rules/metrics.md, TSL203).
FIX_2943_RELEASE = (1, 6, 2)


@dataclass(frozen=True)
class MetricClass:
    """What we know of a torchmetrics class (or a user subclass of one)."""

    name: str
    family: str  # "aggregation" | "classification" | "collection" | "custom"
    params: tuple[str, ...] = ()  # constructor parameters in positional order
    defaults: tuple[tuple[str, object], ...] = ()
    task: str | None = None  # "multiclass"... ; None for the `task=` wrappers (read the argument)
    weighted: bool = False  # `update(value, weight)`: MeanMetric and RunningMean
    bincount_always: bool = False  # confusion matrices bincount whatever `average` is
    overrides: frozenset[str] = frozenset()  # methods a user subclass redefines ("*": any may be)
    preset: tuple = ()  # (keyword, expression) bound by `functools.partial(MeanMetric, ...)`

    def default(self, key: str) -> object:
        return dict(self.defaults).get(key, _MISSING)

    def redefines(self, method: str) -> bool:
        """Does a user subclass (or a factory we cannot read) replace ``method``?"""
        return method in self.overrides or ANY_METHOD in self.overrides


ANY_METHOD = "*"  # a class made by code we cannot read: any method may be replaced


_MISSING = object()

_AGG_PARAMS = ("nan_strategy",)
_RUNNING_PARAMS = ("window", "nan_strategy")
_MC_PARAMS = ("num_classes", "top_k", "average", "multidim_average", "ignore_index", "validate_args")
_TASK_PARAMS = ("task", "threshold", "num_classes", "num_labels", "average", "multidim_average", "top_k", "ignore_index", "validate_args")
_DIST_DEFAULTS = (("sync_on_compute", True),)


def _agg(name: str, params=_AGG_PARAMS, weighted: bool = False) -> MetricClass:
    # aggregation.py: every public aggregator defaults to nan_strategy="warn" (BaseAggregator: "error").
    return MetricClass(name, "aggregation", params, (("nan_strategy", "warn"), *_DIST_DEFAULTS), weighted=weighted)


def _multiclass(name: str, params=_MC_PARAMS, average: str | None = "macro", **kw) -> MetricClass:
    return MetricClass(name, "classification", params, (("average", average), ("top_k", 1), ("multidim_average", "global"), ("validate_args", True), *_DIST_DEFAULTS), task="multiclass", **kw)


def _wrapper(name: str, params=_TASK_PARAMS, average: str | None = "micro", **kw) -> MetricClass:
    # The `task=` wrappers default to average="micro" (accuracy.py:498), unlike Multiclass* ("macro").
    return MetricClass(name, "classification", params, (("average", average), ("top_k", 1), ("multidim_average", "global"), ("validate_args", True), *_DIST_DEFAULTS), **kw)


KNOWN_CLASSES: dict[str, MetricClass] = {
    c.name: c
    for c in (
        _agg("MeanMetric", weighted=True),
        _agg("SumMetric"),
        _agg("MaxMetric"),
        _agg("MinMetric"),
        _agg("CatMetric"),
        _agg("RunningMean", _RUNNING_PARAMS, weighted=True),
        _agg("RunningSum", _RUNNING_PARAMS),
        *(_multiclass(f"Multiclass{n}") for n in ("Accuracy", "Precision", "Recall", "F1Score", "StatScores", "Specificity", "NegativePredictiveValue", "HammingDistance")),
        _multiclass("MulticlassFBetaScore", ("beta", *_MC_PARAMS)),
        _multiclass("MulticlassJaccardIndex", ("num_classes", "average", "ignore_index", "validate_args"), bincount_always=True),
        _multiclass("MulticlassConfusionMatrix", ("num_classes", "ignore_index", "normalize", "validate_args"), average=None, bincount_always=True),
        *(_wrapper(n) for n in ("Accuracy", "Precision", "Recall", "F1Score", "StatScores", "Specificity", "HammingDistance", "NegativePredictiveValue")),
        _wrapper("FBetaScore", ("task", "beta", *_TASK_PARAMS[1:])),
        _wrapper("JaccardIndex", ("task", "threshold", "num_classes", "num_labels", "average", "ignore_index", "validate_args"), average="macro", bincount_always=True),
        _wrapper("ConfusionMatrix", ("task", "threshold", "num_classes", "num_labels", "normalize", "ignore_index", "validate_args"), average=None, bincount_always=True),
        MetricClass("MetricCollection", "collection", ("metrics",)),
        MetricClass("Metric", "custom", (), _DIST_DEFAULTS),
    )
}
AGGREGATION_BASES = frozenset({"BaseAggregator"})

# Methods that return the metric itself (nn.Module semantics).
_SAME_OBJECT_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "set_dtype", "type", "train", "eval", "requires_grad_", "to_empty"})
_ITEM_VIEWS = frozenset({"items", "values"})


def literal(expr: cst.BaseExpression | None) -> object:
    """A Python literal from source (str/int/float/bool/None), else UNKNOWN."""
    if isinstance(expr, cst.SimpleString):
        return evaluated_literal(expr)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0)
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", ""))
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = literal(expr.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else UNKNOWN
    return UNKNOWN


# -- torchmetrics version (TSL203) ---------------------------------------------------------
_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: object) -> tuple[int, int, int] | None:
    """"1.6.1" -> (1, 6, 1); "1.7" -> (1, 7, 0); pre-releases count as their release."""
    if not isinstance(text, str):
        return None
    m = _VERSION.match(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def target_torchmetrics_version(settings: dict) -> tuple[tuple[int, int, int] | None, str]:
    """(version, where it came from): config `torchmetrics-version`, else the installed one."""
    configured = settings.get("torchmetrics-version") if settings else None
    if configured:
        return parse_version(configured), "configured"
    installed = installed_torchmetrics_version()
    if installed:
        return parse_version(installed), "installed"
    return None, "unknown"
