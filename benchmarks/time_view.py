"""The project view's overhead timed in fresh interpreters, as a user's `check` runs: every
tree of ``--projects`` linted with the view (`lint_paths`) or each of its modules alone
(`lint_source`, reading each file included), one interpreter per (run, code, mode), the runs
interleaved so that a drift of the machine falls on every column alike.

`bench_lint.py --projects` times the same work in one process, each tree repeated: there the
memory a run frees is reused by the next, and a collection one run starts may free another's
garbage. Here each run starts bare: its page faults, its collections and its peak memory are
its own. Reported: process time (user + system, `getrusage` around the work, not the start-up),
minor page faults and peak memory, medians over ``--runs``.

    python benchmarks/time_view.py --projects DIR [--runs 5] [--code DIR ...]

``--code``: a directory holding another version's `torchsync_lint/` package (an export of
another commit), timed beside this checkout's. Every run has PYTHONHASHSEED=0 and starts in an
empty directory (so that the package comes from where it is asked to). Not part of the test
suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_RUN = r"""
import json, resource, sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from bench_lint import python_files
from torchsync_lint.api import config_for, lint_paths
from torchsync_lint.engine import lint_source
from torchsync_lint.parallel import relaxed_gc
from torchsync_lint.rule import load_rules

mode, base = sys.argv[1], Path(sys.argv[2])
roots = sorted(p for p in base.iterdir() if p.is_dir())
codes = {{c for c, r in load_rules().items() if r.default_enabled}}
files = {{r: python_files([r]) for r in roots}}
configs = {{r: config_for([str(r)]) for r in roots}}
lint_source("import torch\nx = torch.zeros(1)\n", "warm.py", codes, {{}})  # (the rules and the parser loaded alike)
before = resource.getrusage(resource.RUSAGE_SELF)
for root in roots:
    if mode == "view":
        lint_paths([str(root)], configs[root], 1, use_cache=False)
    else:
        with relaxed_gc():  # (as bench_lint.py's module-by-module loop)
            for path in files[root]:
                try:
                    lint_source(path.read_text(encoding="utf-8", errors="replace"), str(path), codes, {{}})
                except Exception:  # noqa: BLE001 - a file a corpus cannot parse is skipped alike
                    pass
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{
    "seconds": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    "system": after.ru_stime - before.ru_stime,
    "faults": after.ru_minflt - before.ru_minflt,
    "peak_mb": after.ru_maxrss / 1024,
}}))
"""


def run_once(code: Path, mode: str, projects: Path) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(code)}
    script = _RUN.format(bench=str(ROOT / "benchmarks"))
    with tempfile.TemporaryDirectory() as empty:
        out = subprocess.run([sys.executable, "-c", script, mode, str(projects)], cwd=empty, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=Path, required=True, help="a directory of project trees (one per subdirectory)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--code", type=Path, action="append", default=[], help="another version's package directory, timed beside this checkout's")
    args = parser.parse_args()
    versions = {"this checkout": ROOT, **{str(c): c.resolve() for c in args.code}}
    results: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.runs):
        for name, code in versions.items():
            for mode in ("view", "alone"):
                results.setdefault((name, mode), []).append(run_once(code, mode, args.projects.resolve()))
    for name in versions:
        view, alone = results[(name, "view")], results[(name, "alone")]
        v, a = (statistics.median(r["seconds"] for r in rs) for rs in (view, alone))
        paired = statistics.median(x["seconds"] / y["seconds"] - 1 for x, y in zip(view, alone))
        print(f"{name}: view {v:.2f} s, alone {a:.2f} s -> {100 * (v / a - 1):+.1f}% (median of paired ratios {100 * paired:+.1f}%, {args.runs} runs)")
        for mode, rs in (("view", view), ("alone", alone)):
            print(
                f"  {mode:5s} system {statistics.median(r['system'] for r in rs):.2f} s, "
                f"minor page faults {statistics.median(r['faults'] for r in rs):,.0f}, peak {statistics.median(r['peak_mb'] for r in rs):.0f} MB"
            )


if __name__ == "__main__":
    main()
