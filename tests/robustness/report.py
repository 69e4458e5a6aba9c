"""Print the invariance of the analysis per rewrite as a table (markdown).

    python -m tests.robustness.report                   # every rewrite, every fixture
    python -m tests.robustness.report --details         # and the broken markers, the extra findings
    python -m tests.robustness.report --rewrite kwargs  # one rewrite (repeatable)
    python -m tests.robustness.report --update-baseline # write tests/robustness/baseline.json

Run from the repository root (with PYTHONPATH pointing at the checkout to measure).
"""

from __future__ import annotations

import argparse
import sys
import time

from .measure import measure_all, write_baseline
from .rewritten import GATED, GONE


def table(summaries) -> str:
    rows = [
        "| rewrite | expected | fixtures (n/a) | markers | expected gone / gated | held | broken | invariance | extra findings |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    held = broken = 0
    for s in summaries:
        inv = "-" if s.invariance is None else f"{s.invariance:.2f}"
        n = len(s.held) + len(s.broken)
        held, broken = held + len(s.held), broken + len(s.broken)
        gone = sum(v == GONE for v in s.changed.values())
        gated = sum(v == GATED for v in s.changed.values())
        rows.append(f"| {s.rewrite} | {s.expected} | {s.fixtures} ({len(s.not_applicable)}) | {n} | {gone} / {gated} | {len(s.held)} | {len(s.broken)} | {inv} | {len(s.extra)} |")
    if held + broken:
        rows.append(f"| **all** | | | {held + broken} | | {held} | {broken} | {held / (held + broken):.2f} | {sum(len(s.extra) for s in summaries)} |")
    return "\n".join(rows)


def details(summaries) -> str:
    out = []
    for s in summaries:
        for key in sorted(s.broken):
            out.append(f"{s.rewrite}: broken {key}" + (" (the rewrite lost its marker comment)" if key in s.lost_tags else ""))
        for key in sorted(s.extra):
            out.append(f"{s.rewrite}: extra {key}")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.robustness.report", description=__doc__.splitlines()[0])
    parser.add_argument("--rewrite", action="append", help="only this rewrite (repeatable)")
    parser.add_argument("--details", action="store_true", help="list the broken markers and the extra findings")
    parser.add_argument("--update-baseline", action="store_true", help="write tests/robustness/baseline.json from this run")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    summaries = measure_all(args.rewrite)
    print(table(summaries))
    if args.details:
        print()
        print(details(summaries))
    print(f"\n({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    if args.update_baseline:
        write_baseline(summaries)
        print("baseline written: tests/robustness/baseline.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
