"""Where the time of `torchsync-lint verify fixtures/ --backend emulate` goes, and the whole run.

1. Start-up of one run: a bare interpreter, `import torch`, and what an emulated run imports
   before the script starts (torch, torchmetrics, and torch._dynamo, which the first
   TorchDispatchMode call imports).
2. Each fixture run once, one at a time, both ways runs can start: a fresh interpreter per run
   (TORCHSYNC_VERIFY_FORK=0) and forked from the preloaded server; wall and CPU seconds of the
   harness process (the supervisor's wait4).
3. The whole CI command, `verify fixtures/ --backend emulate --jobs 2`, both ways.

The machine is shared: numbers are medians of --repeats runs, the load average is printed
beside them, and the two ways are measured alternately so a drifting load hits both.
Run: `python benchmarks/bench_verify.py [--repeats 3] [--skip-per-run] [--baseline CHECKOUT]`
(`--baseline`: a checkout of another version, e.g. `git worktree add /tmp/main main`, timed
with the same fixtures/ in the same rounds). Not part of the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchsync_lint.verify import command, launch, runner, scripts  # noqa: E402

MODES = {"fresh": "0", "fork": "1"}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def wall(cmd: list[str], env: dict[str, str] | None = None, cwd: str | Path = ROOT) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def startup(repeats: int) -> None:
    print(f"## start-up of one run (median of {repeats}; load {load()})")
    for label, code in (
        ("python -c pass", "pass"),
        ("import torch", "import torch"),
        ("import torch, torchmetrics, torch._dynamo", "import torch, torchmetrics, torch._dynamo"),
    ):
        print(f"{label:45s} {statistics.median(wall([sys.executable, '-c', code]) for _ in range(repeats)):6.2f} s")


def per_run(repeats: int) -> None:
    found, _, _ = scripts.discover([str(ROOT / "fixtures")])
    runnable = [scripts.load_script(path) for path in found]
    runnable = [s for s in runnable if not s.missing_requirements]
    env = {"OMP_NUM_THREADS": "1"}
    totals: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    for _ in range(repeats):
        for mode in MODES:
            launcher = launch.ForkServer(command.EMULATE_PRELOAD, env) if mode == "fork" else launch.FreshLauncher(env)
            started = time.perf_counter()
            cpu = 0.0
            for script in runnable:
                run = runner.run_harness(
                    command.EMULATE_HARNESS, script.path, script.args, 300, require_result=script.is_fixture,
                    options=script.options, launcher=launcher,
                )
                if run.status != runner.OK:
                    print(f"  {script.path}: {run.status} {run.detail[-200:]}")
                cpu += run.cpu_s or 0.0
            launcher.close()  # the fork server's own start-up is inside the wall time
            totals[mode].append((time.perf_counter() - started, cpu))
    print(f"\n## {len(runnable)} fixture runs one after another, OMP_NUM_THREADS=1 (median of {repeats}; load {load()})")
    for mode, runs in totals.items():
        print(f"{mode:6s} wall {statistics.median(w for w, _ in runs):6.1f} s   harness CPU {statistics.median(c for _, c in runs):6.1f} s")


def whole(repeats: int, baseline: str | None) -> None:
    command_line = [sys.executable, "-m", "torchsync_lint", "verify", str(ROOT / "fixtures"), "--backend", "emulate", "--jobs", "2"]
    variants = {mode: (str(ROOT), flag) for mode, flag in MODES.items()}
    if baseline:  # another checkout (e.g. a worktree of main), same fixtures/, same interpreter
        variants["baseline"] = (os.path.abspath(baseline), "1")
    times: dict[str, list[float]] = {mode: [] for mode in variants}
    for _ in range(repeats):
        for mode, (code_root, flag) in variants.items():
            env = {**os.environ, "TORCHSYNC_VERIFY_FORK": flag, "PYTHONPATH": code_root}
            times[mode].append(wall(command_line, env, cwd=code_root))  # `-m` imports from the working directory
    print(f"\n## verify fixtures/ --backend emulate --jobs 2 (median of {repeats}; load {load()})")
    for mode, values in times.items():
        print(f"{mode:6s} {statistics.median(values):6.1f} s   (runs: {', '.join(f'{v:.1f}' for v in values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-per-run", action="store_true", help="only start-up and the whole command")
    parser.add_argument("--baseline", default=None, help="a checkout of another version to time the whole command with too")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load at start {load()}\n")
    startup(max(3, args.repeats))
    if not args.skip_per_run:
        per_run(args.repeats)
    whole(args.repeats, args.baseline)


if __name__ == "__main__":
    main()
