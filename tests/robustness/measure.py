"""Invariance of the analysis under each rewrite, over every fixture, and the baseline file.

For a rewrite, a marker the original program's analysis finds is *held* when the rewritten
program's analysis finds what the rewrite expects (the same finding at the moved line; a
gated one saying so; none, for a configured value or a run-once branch) and *broken*
otherwise. Findings of the rewritten program at no marker are *extra* (false positives the
rewrite provoked). Invariance = held / (held + broken).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .harness import evaluate, fixture_paths
from .registry import REWRITES, Rewrite, rewrite_of
from .rewritten import KEPT

BASELINE = Path(__file__).with_name("baseline.json")
UPDATE = "python -m tests.robustness.report --update-baseline"


@dataclass
class Summary:
    rewrite: str
    expected: str
    fixtures: int = 0  # fixtures the rewrite applies to
    not_applicable: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)
    extra: set[str] = field(default_factory=set)
    lost_tags: set[str] = field(default_factory=set)
    changed: dict[str, str] = field(default_factory=dict)  # marker -> GONE/GATED: the rewrite changes what is expected

    @property
    def invariance(self) -> float | None:
        total = len(self.held) + len(self.broken)
        return len(self.held) / total if total else None


def measure(rewrite: Rewrite, paths: list[Path] | None = None) -> Summary:
    summary = Summary(rewrite.name, rewrite.expected)
    for path in paths or fixture_paths():
        out = evaluate(path, lambda _src, path=path: rewrite_of(rewrite.name, path))
        if not out.applicable:
            summary.not_applicable.append(out.fixture)
            continue
        summary.fixtures += 1
        summary.held |= set(out.held)
        summary.broken |= set(out.broken)
        summary.extra |= set(out.extra)
        summary.lost_tags |= set(out.lost_tags)
        summary.changed.update({k: v for k, v in out.expectations.items() if v != KEPT})
    return summary


def measure_all(names: list[str] | None = None) -> list[Summary]:
    return [measure(r) for r in REWRITES if names is None or r.name in names]


def compare(want: dict, got: Summary) -> tuple[list[str], list[str], list[str], list[str]]:
    """Against a baseline entry: (held markers lost, new extra findings) are regressions,
    (markers newly held, extra findings gone) improvements."""
    preserved, extra = set(want["preserved"]), set(want["extra"])
    return sorted(preserved - got.held), sorted(got.extra - extra), sorted(got.held - preserved), sorted(extra - got.extra)


def read_baseline() -> dict:
    return json.loads(BASELINE.read_text())["rewrites"] if BASELINE.exists() else {}


def write_baseline(summaries: list[Summary]) -> None:
    """The baseline: per rewrite, the markers held and the extra findings (sorted: diffs
    review well). A partial run (some rewrites) keeps the others' entries."""
    data = read_baseline()
    for s in summaries:
        data[s.rewrite] = {"preserved": sorted(s.held), "extra": sorted(s.extra)}
    doc = (
        "Robustness baseline (tests/robustness): per rewrite, the markers ('fixture:line:code') whose "
        "finding the analysis keeps as expected after the rewrite, and the findings the rewritten "
        f"programs have at no marker. Regenerate with `{UPDATE}`."
    )
    BASELINE.write_text(json.dumps({"_doc": doc, "rewrites": dict(sorted(data.items()))}, indent=1) + "\n")
