"""Per-script cost of the emulate harness, optionally against other copies of the package.

    .venv/bin/python benchmarks/bench_emulate_overhead.py [--repeats 5] [--baseline DIR]... SCRIPT...

Each run is ``python -m torchsync_lint.verify.emulate.harness --out F SCRIPT --steps N`` in a
fresh subprocess (what ``verify`` does per script), so interpreter and torch start-up are
included. Reported per version: the median wall time and the median CPU time (user + sys of
the child). On a shared machine the CPU time is the steadier number: wall time also counts
the time the child waited for a core. With ``--baseline DIR`` (repeatable; a directory holding
an older ``torchsync_lint`` package, e.g. ``git archive main torchsync_lint | tar -x -C DIR``)
the versions are run alternately, so all see the same machine load, and the ratios of the
medians to each baseline are printed. Not a test: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(script: str, steps: int, package_dir: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one harness run."""
    env = dict(os.environ)
    env["PYTHONPATH"] = package_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "torchsync_lint.verify.emulate.harness", "--out", os.path.join(tmp, "r.json"), script, "--steps", str(steps)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        # cwd outside any checkout: `python -m` puts the cwd first on sys.path, ahead of PYTHONPATH.
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed under {package_dir}:\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="+")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--baseline", action="append", default=[], help="directory holding a torchsync_lint package to compare with")
    args = parser.parse_args()
    versions = {os.path.basename(os.path.normpath(d)): os.path.abspath(d) for d in args.baseline}
    versions["current"] = ROOT
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.repeats} runs each, versions alternating")
    for script in map(os.path.abspath, args.scripts):
        walls: dict[str, list[float]] = {name: [] for name in versions}
        cpus: dict[str, list[float]] = {name: [] for name in versions}
        for _ in range(args.repeats):
            for name, package_dir in versions.items():
                wall, cpu = run_once(script, args.steps, package_dir)
                walls[name].append(wall)
                cpus[name].append(cpu)
        print(os.path.relpath(script, ROOT))
        cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
        for name in versions:
            ratio = "" if name == "current" else f"   current/{name}: CPU {cpu_medians['current'] / cpu_medians[name]:.2f}x"
            print(f"  {name:>12}: wall {statistics.median(walls[name]):6.2f} s, CPU {cpu_medians[name]:6.2f} s{ratio}")


if __name__ == "__main__":
    main()
