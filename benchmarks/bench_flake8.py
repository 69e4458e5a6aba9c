"""What the flake8 plugin costs a flake8 run, with and without TSL codes selected.

flake8 builds every installed plugin for every file and filters the results by `--select`
afterwards, so a plugin that does its work unconditionally makes every flake8 run pay for it.
This script times the same flake8 runs over one tree:

- `E, no plugin`: `flake8 --select E` with our plugin hidden from flake8 (the baseline);
- `E`: `flake8 --select E` with the plugin installed (should equal the baseline);
- `TSL` and `TSL101`: the plugin doing its work for all rules / for one rule;
- `check`: `torchsync-lint check` on the same tree, for comparison.

It reports CPU seconds (user + system of the flake8 process and its children, so load from
other processes on a shared machine barely moves it) and wall seconds, medians of
``--repeats`` runs, with `-j 1` so the CPU time is one process's.

    python benchmarks/bench_flake8.py                      # torch/optim + torch/utils/data
    python benchmarks/bench_flake8.py --tree src/ --repeats 5
    python benchmarks/bench_flake8.py --pythonpath /path/to/other/checkout   # time another version

Not part of the test suite.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs flake8 with the torchsync-lint distribution filtered out of plugin discovery.
_WITHOUT_PLUGIN = """
import sys
import flake8.plugins.finder as finder
_found = finder._find_importlib_plugins
finder._find_importlib_plugins = lambda: (p for p in _found() if p.package != "torchsync-lint")
from flake8.main.cli import main
sys.exit(main(sys.argv[1:]))
"""


def default_tree() -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pass --tree")
    base = Path(list(spec.submodule_search_locations)[0])
    return [str(base / "optim"), str(base / "utils" / "data")]


def count_lines(paths: list[str]) -> tuple[int, int]:
    files = lines = 0
    for p in paths:
        for f in Path(p).rglob("*.py") if Path(p).is_dir() else [Path(p)]:
            files += 1
            lines += f.read_bytes().count(b"\n")
    return files, lines


def timed(cmd: list[str], env: dict, cwd: str) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return cpu, wall, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", nargs="+", help="files or directories (default: torch/optim and torch/utils/data)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pythonpath", help="put this checkout first on sys.path (time another version of the plugin)")
    parser.add_argument("--skip-check", action="store_true", help="do not time `torchsync-lint check`")
    args = parser.parse_args()

    tree = [os.path.abspath(p) for p in args.tree or default_tree()]
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.pythonpath, env.get("PYTHONPATH")]))
    py = sys.executable
    flake8 = [py, "-m", "flake8", "--isolated", "-j", "1", "--exit-zero"]
    runs = {
        "E, no plugin": [py, "-c", _WITHOUT_PLUGIN, "--isolated", "-j", "1", "--exit-zero", "--select", "E", *tree],
        "E": [*flake8, "--select", "E", *tree],
        "TSL": [*flake8, "--select", "TSL", *tree],
        "TSL101": [*flake8, "--select", "TSL101", *tree],
    }
    if not args.skip_check:
        runs["check"] = [py, "-m", "torchsync_lint", "check", "--isolated", "--jobs", "1", "--exit-zero", "-q", *tree]
    files, lines = count_lines(tree)
    load = os.getloadavg()[0]
    print(f"tree: {' '.join(tree)} ({files} files, {lines:,} lines); Python {sys.version.split()[0]}; "
          f"load average {load:.1f} at the start; medians of {args.repeats}")
    results: dict[str, tuple[float, float]] = {}
    # Run from an empty directory: `python -m`/`-c` put the working directory first on sys.path,
    # which would shadow --pythonpath with whatever checkout this is run from.
    with tempfile.TemporaryDirectory() as cwd:
        for name, cmd in runs.items():
            samples = [timed(cmd, env, cwd) for _ in range(args.repeats)]
            results[name] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
    base_cpu = results["E, no plugin"][0]
    print(f"| run | CPU s | wall s | CPU vs `E, no plugin` |\n|---|---|---|---|")
    for name, (cpu, wall) in results.items():
        print(f"| `{name}` | {cpu:.2f} | {wall:.2f} | {cpu / base_cpu:.2f}x |")


if __name__ == "__main__":
    main()
