"""Lint-path performance: start-up, fixtures, and a large synthetic file.

Timings on shared 2-core machines are noisy, so every number is a median of several runs
and the start-up cost is reported as a ratio to a bare `python -c pass` in the same run.
Run: `python benchmarks/bench_lint.py [--repeats 5]`. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - t0


def median_of(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def synthetic_module(functions: int) -> str:
    """A big training-like module: many small functions plus hot loops (~7.5k lines at 1000)."""
    parts = ["import torch\nimport torch.nn.functional as F\ndevice = torch.device('cuda')\n"]
    for i in range(functions):
        parts.append(
            f"def step_{i}(model, loader, opt):\n"
            f"    total = 0.0\n"
            f"    for x, y in loader:\n"
            f"        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n"
            f"        loss = F.cross_entropy(model(x), y)\n"
            f"        loss.backward()\n"
            f"        total += loss.item()\n"
        )
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    bare = median_of(lambda: wall([py, "-c", "pass"]), args.repeats)
    version = median_of(lambda: wall([py, "-m", "torchsync_lint", "--version"]), args.repeats)
    fixtures = median_of(lambda: wall([py, "-m", "torchsync_lint", "check", "-q", "--exit-zero", "fixtures"]), args.repeats)
    n_fixtures = len([p for p in (ROOT / "fixtures").rglob("*.py")])
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.py"
        big.write_text(synthetic_module(1000))
        lines = big.read_text().count("\n")
        big_time = median_of(lambda: wall([py, "-m", "torchsync_lint", "check", "-q", "--exit-zero", str(big)]), max(1, args.repeats // 2))
        # Parallel check: 80 training-script-sized files (~300 lines each), serial vs one job
        # per core, alternated so load drifts hit both alike.
        tree = Path(tmp) / "tree"
        tree.mkdir()
        for i in range(80):
            (tree / f"train_{i:02d}.py").write_text(synthetic_module(40))
        cores = os.cpu_count() or 1
        serial, spread = [], []
        for _ in range(args.repeats):
            serial.append(wall([py, "-m", "torchsync_lint", "check", "-q", "--exit-zero", "--jobs", "1", str(tree)]))
            spread.append(wall([py, "-m", "torchsync_lint", "check", "-q", "--exit-zero", "--jobs", str(cores), str(tree)]))
        tree_serial, tree_parallel = statistics.median(serial), statistics.median(spread)
    print(f"python -c pass                 {bare * 1000:8.1f} ms")
    print(f"torchsync-lint --version       {version * 1000:8.1f} ms  ({version / bare:.1f}x bare python)")
    print(f"check fixtures/ ({n_fixtures} files)     {fixtures * 1000:8.1f} ms")
    print(f"check synthetic {lines}-line file {big_time * 1000:8.1f} ms")
    print(f"check 80 files, --jobs 1        {tree_serial * 1000:8.1f} ms")
    print(f"check 80 files, --jobs {cores}        {tree_parallel * 1000:8.1f} ms  ({tree_serial / tree_parallel:.2f}x)")


if __name__ == "__main__":
    main()
