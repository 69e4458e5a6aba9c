"""Every rule's code, name and default, as data: what selecting rules and keying the result cache
need, without importing the rule families (and libcst with them). A run whose results all come
from the cache reads only this; tests/test_catalog.py checks it against the rules themselves."""

from __future__ import annotations

from typing import NamedTuple


class RuleEntry(NamedTuple):
    code: str
    name: str
    default_enabled: bool


RULES = (
    RuleEntry("TSL101", "host-read-in-loop", True),
    RuleEntry("TSL102", "tensor-truthiness-in-loop", True),
    RuleEntry("TSL103", "tensor-format-in-loop", True),
    RuleEntry("TSL104", "explicit-sync-in-loop", True),
    RuleEntry("TSL105", "dynamic-shape-in-loop", True),
    RuleEntry("TSL106", "tensor-logged-in-loop", True),
    RuleEntry("TSL201", "metric-update-nan-check", True),
    RuleEntry("TSL202", "metric-scalar-update", True),
    RuleEntry("TSL203", "metric-default-weight", True),
    RuleEntry("TSL204", "metric-compute-in-loop", True),
    RuleEntry("TSL205", "cpu-metric-distributed-sync", True),
    RuleEntry("TSL206", "classification-metric-bincount", True),
    RuleEntry("TSL301", "blocking-host-to-device-copy", True),
    RuleEntry("TSL302", "dataloader-unpinned-memory", True),
    RuleEntry("TSL303", "dataloader-main-process-loading", True),
    RuleEntry("TSL304", "host-float-normalization", True),
    RuleEntry("TSL305", "host-tensor-in-loop", True),
    RuleEntry("TSL904", "unused-suppression", True),
)


def rule_table() -> dict[str, RuleEntry]:
    """code -> entry, in code order: the shape `Config.codes_for_path` takes (as load_rules)."""
    return {entry.code: entry for entry in RULES}
