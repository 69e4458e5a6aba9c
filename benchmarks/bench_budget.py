"""Wall time of the sync-budget check over the fixtures, as .ci/run runs it.

    .venv/bin/python benchmarks/bench_budget.py [--repeats 3] [--jobs 2] [--budget budgets/fixtures.toml]

Times, alternately so a drifting machine load hits all alike:

1. `verify fixtures/ --budget budgets/fixtures.toml --backend emulate --jobs N` (the check);
2. the same with `--update-budget` written into a temporary copy of the budget (must leave it
   byte-identical: the fixtures did not change);
3. `verify fixtures/ --backend emulate --jobs N` (the verifier's own fixture check: the budget
   skips the lint and the matching, but replays the same scripts).

Prints the median and every run, the load average, and whether each check passed (exit 0).
The target of issue 24 is under 30 s for the fixture suite with --jobs 2. Not part of the tests.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "torchsync_lint.cli"]


def timed(argv: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([*CLI, *argv], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
    return elapsed, done.returncode


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", default="budgets/fixtures.toml")
    options = parser.parse_args()
    jobs = ["--backend", "emulate", "--jobs", str(options.jobs)]
    # The copy sits beside the budget: paths in it are relative to the project root above it.
    copy = ROOT / "budgets" / f".bench-{os.getpid()}.toml"
    shutil.copy(ROOT / options.budget, copy)
    commands = {
        "check": ["verify", "fixtures/", "--budget", options.budget, *jobs],
        "update (copy of the budget)": ["verify", "fixtures/", "--budget", str(copy), "--update-budget", *jobs],
        "verify fixtures/ (no budget)": ["verify", "fixtures/", *jobs],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    codes: dict[str, set[int]] = {name: set() for name in commands}
    try:
        print(f"load average at start: {load()}; cores: {os.cpu_count()}; {options.repeats} rounds")
        for _ in range(options.repeats):
            for name, argv in commands.items():
                elapsed, code = timed(argv)
                times[name].append(elapsed)
                codes[name].add(code)
        identical = filecmp.cmp(copy, ROOT / options.budget, shallow=False)
    finally:
        copy.unlink(missing_ok=True)
    for name, values in times.items():
        runs = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name:32s} median {statistics.median(values):6.1f} s (runs {runs}); exit {sorted(codes[name])}")
    print(f"load average at end: {load()}; the update left the budget byte-identical: {identical}")
    return 0 if identical and all(c == {0} for c in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
