"""The project view's overhead in executed instructions: deterministic, so two versions of the
code can be compared without the 10-15% noise of timings on shared machines.

Runs the work of `bench_lint.py`'s project part (every tree of ``--projects`` linted with the
view by `lint_paths`, or each of its modules alone by `lint_source`) under valgrind's callgrind
and reads the instruction count (Ir). A third run does the same set-up (imports, reading the
files, one warm-up lint) and no linting: its count is taken off both, and the overhead is the
ratio of what is left. Every run has the same PYTHONHASHSEED (``--hashseed``, 0 by default):
with a random one, set orders moved the counts by about 0.2% between runs of the same code. Callgrind runs about 50x slower than
Python alone: the 25 trees of docs/precision.md take about ten minutes per run (the three
runs go two at a time).

    python benchmarks/count_view_work.py --projects DIR [--code DIR] [--trees a,b,c] [--hashseed N]

``--code``: a directory holding another version's `torchsync_lint/` package (an export of
another commit): it is put first on the path of the runs. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What each run executes (argv: mode, projects directory, comma-separated tree names).
_RUN = r"""
import sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from bench_lint import python_files
from torchsync_lint.api import config_for, lint_paths
from torchsync_lint.engine import lint_source
from torchsync_lint.parallel import relaxed_gc
from torchsync_lint.rule import load_rules

mode, base, names = sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(",")
roots = [base / n for n in names]
codes = {{c for c, r in load_rules().items() if r.default_enabled}}
files = {{r: [(p, p.read_text(encoding="utf-8", errors="replace")) for p in python_files([r])] for r in roots}}
configs = {{r: config_for([str(r)]) for r in roots}}
lint_source("import torch\nx = torch.zeros(1)\n", "warm.py", codes, {{}})  # (the rules and the parser loaded alike)
for root in roots:
    if mode == "view":
        lint_paths([str(root)], configs[root], 1, use_cache=False)
    elif mode == "alone":
        with relaxed_gc():  # (as bench_lint.py's module-by-module loop)
            for path, text in files[root]:
                try:
                    lint_source(text, str(path), codes, {{}})
                except Exception:  # noqa: BLE001 - a file a corpus cannot parse is skipped alike
                    pass
"""


def instructions(mode: str, projects: Path, trees: list[str], code: Path | None, hashseed: int = 0) -> int:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = str(hashseed)  # (set orders decide some of the work: see the docstring)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code.resolve()), env.get("PYTHONPATH", "")])
    script = _RUN.format(bench=str(ROOT / "benchmarks"))
    # Run from an empty directory: `python -c` puts its working directory first on the path, and
    # from the repository root that would import this checkout's package over ``--code``'s.
    with tempfile.TemporaryDirectory() as empty:
        out = _callgrind(script, mode, projects, trees, env, empty)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in callgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def _callgrind(script: str, mode: str, projects: Path, trees: list[str], env: dict, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", script, mode, str(projects), ",".join(trees)],
        env=env, cwd=cwd, capture_output=True, text=True, check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=Path, required=True, help="a directory of project trees (one per subdirectory)")
    parser.add_argument("--code", type=Path, help="a directory holding the torchsync_lint package to measure")
    parser.add_argument("--trees", help="comma-separated names of the trees to run (default: all)")
    parser.add_argument("--hashseed", type=int, default=0, help="PYTHONHASHSEED of the runs (default 0)")
    args = parser.parse_args()
    args.projects = args.projects.resolve()  # (the runs start in an empty directory)
    trees = args.trees.split(",") if args.trees else sorted(d.name for d in args.projects.iterdir() if d.is_dir())
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(("none", "alone", "view"), pool.map(lambda m: instructions(m, args.projects, trees, args.code, args.hashseed), ("none", "alone", "view"))))
    alone, view = counts["alone"] - counts["none"], counts["view"] - counts["none"]
    print(f"{len(trees)} trees, PYTHONHASHSEED={args.hashseed}; instructions: set-up {counts['none']:,}, alone {alone:,}, with the view {view:,}")
    print(f"the view's overhead: {100 * (view / alone - 1):+.1f}%")


if __name__ == "__main__":
    main()
