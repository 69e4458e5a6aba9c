"""How the cost of a run scales with the repository around the file (issue 39).

    python benchmarks/bench_scaling.py --tree diffusers-examples=/work/bench/diffusers:examples \
        --one-file examples/dreambooth/train_dreambooth.py --imported src/diffusers/training_utils.py \
        --unrelated examples/text_to_image/train_text_to_image.py [--repeats 3] [--json OUT]
        [--one-file-only]

A tree is NAME=ROOT[:SUBDIR]: the repository checkout (its own pyproject.toml or .git makes it
the project root, as for a user) and the part of it to lint (default: all of it). The trees are
real repositories fetched outside this one (never committed): for diffusers, the search tool's
`fetch github:huggingface/diffusers`, then `git --git-dir=<mirror> archive HEAD | tar -x -C DIR`.

Per tree, each a median of ``--repeats`` fresh processes, measured side by side in one run:
- cold whole tree (`-j 2`, an emptied cache), warm whole tree (the cache just written);
- with ``--one-file``: that file cold, warm, after an edit of a module it imports
  (``--imported``) and of one it does not (``--unrelated``), and the same file copied alone
  into an empty folder (the floor it should cost);
- libcst's parse of the same files (`import libcst` + `parse_module` of each, one process) and
  TorchFix (`flake8 --select TOR`, when it is installed) over them;
- CPU time (user + system of the process and its children) and peak RSS of every run.
Timings on the shared 2-core machines are noisy: compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}


def run(cmd: list[str], cwd: Path) -> dict:
    """Wall time, CPU time and peak RSS of one fresh process tree (os.wait4: this child's own
    usage, its reaped workers included, not that of earlier runs)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0), err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024, "out": stdout}


def median_of(repeats: int, make) -> dict:
    runs = [make() for _ in range(repeats)]
    return {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_mb")} | {"runs": len(runs)}


def check(root: Path, paths: list[str], jobs: int = 2) -> list[str]:
    return [PY, "-m", "torchsync_lint", "check", "--exit-zero", "--statistics", "--jobs", str(jobs), *paths]


def clear_cache(root: Path) -> None:
    shutil.rmtree(root / ".torchsync_cache", ignore_errors=True)


def python_files(root: Path, sub: str) -> list[Path]:
    return sorted(p for p in (root / sub).rglob("*.py") if ".torchsync_cache" not in p.parts)


def touch_edit(path: Path) -> None:
    """An edit that changes the text (so every content key of it changes) but no meaning."""
    path.write_text(path.read_text(encoding="utf-8") + f"\n# bench edit {time.time_ns()}\n", encoding="utf-8")


def bench_tree(name: str, root: Path, sub: str, args) -> dict:
    files = python_files(root, sub)
    result: dict = {"tree": name, "files": len(files), "lines": sum(p.read_bytes().count(b"\n") for p in files)}
    target = [sub or "."]

    def cold() -> dict:
        clear_cache(root)
        return run(check(root, target), root)

    if not args.one_file_only:
        result["cold_tree"] = median_of(args.repeats, cold)
        result["warm_tree"] = median_of(args.repeats, lambda: run(check(root, target), root))
    listing = Path(tempfile.mkstemp(suffix=".txt")[1])
    listing.write_text("\n".join(str(p) for p in files))
    parse = [PY, "-c", "import libcst, sys\nfor p in open(sys.argv[1]).read().split('\\n'):\n    libcst.parse_module(open(p, 'rb').read())", str(listing)]
    if not args.one_file_only:
        result["libcst_parse"] = median_of(args.repeats, lambda: run(parse, root))
    if not args.one_file_only and subprocess.run([PY, "-c", "import torchfix"], capture_output=True, check=False).returncode == 0:
        tf = [PY, "-m", "flake8", "--select", "TOR", "--exit-zero", *target]
        result["torchfix"] = median_of(max(1, args.repeats // 2), lambda: run(tf, root))
    if args.one_file:
        one = args.one_file
        result["one_file"] = one
        result["one_cold"] = median_of(args.repeats, lambda: (clear_cache(root), run(check(root, [one]), root))[1])
        result["one_warm"] = median_of(args.repeats, lambda: run(check(root, [one]), root))
        for label, edited in (("one_after_imported_edit", args.imported), ("one_after_unrelated_edit", args.unrelated)):
            if not edited:
                continue
            path = root / edited
            original = path.read_bytes()
            try:
                def after_edit() -> dict:
                    touch_edit(path)
                    return run(check(root, [one]), root)

                result[label] = median_of(args.repeats, after_edit)
            finally:
                path.write_bytes(original)
        with tempfile.TemporaryDirectory() as alone:
            shutil.copy(root / one, Path(alone) / Path(one).name)
            result["one_alone"] = median_of(args.repeats, lambda: run(check(Path(alone), [Path(one).name]), Path(alone)))
        result["import_libcst_and_parse_one"] = median_of(args.repeats, lambda: run([PY, "-c", "import libcst, sys; libcst.parse_module(open(sys.argv[1], 'rb').read())", str(root / one)], root))
    return result


def report(r: dict) -> str:
    lines = [f"## {r['tree']}: {r['files']} files, {r['lines']:,} lines"]
    for key in ("cold_tree", "warm_tree", "libcst_parse", "torchfix", "one_alone", "import_libcst_and_parse_one", "one_cold", "one_warm", "one_after_imported_edit", "one_after_unrelated_edit"):
        if key in r:
            m = r[key]
            lines.append(f"- {key}: {m['wall_s']:.2f} s wall, {m['cpu_s']:.2f} s CPU, peak {m['peak_mb']:.0f} MB")
    if "libcst_parse" in r and "cold_tree" in r:
        lines.append(f"- cold tree / libcst parse (CPU): {r['cold_tree']['cpu_s'] / r['libcst_parse']['cpu_s']:.2f}x (target <= 3x)")
    if "torchfix" in r and "cold_tree" in r:
        lines.append(f"- TorchFix / cold tree (CPU): {r['torchfix']['cpu_s'] / r['cold_tree']['cpu_s']:.2f}x (target >= 8x)")
    if "one_alone" in r:
        lines.append(f"- one file cold / alone: {r['one_cold']['wall_s'] / r['one_alone']['wall_s']:.2f}x (target <= 2x); warm / (import libcst + parse): {r['one_warm']['wall_s'] / r['import_libcst_and_parse_one']['wall_s']:.2f}x (target <= 1.5x)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=ROOT[:SUBDIR]")
    parser.add_argument("--one-file", help="a file of the (first) tree, relative to its root")
    parser.add_argument("--imported", help="a module the one file imports, edited for a run")
    parser.add_argument("--unrelated", help="a module the one file does not import, edited for a run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one-file-only", action="store_true", help="only the one-file runs (no whole-tree run, parse or TorchFix)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for i, spec in enumerate(args.tree):
        name, _, where = spec.partition("=")
        root, _, sub = where.partition(":")
        if i > 0:
            args.one_file = args.imported = args.unrelated = None
        results.append(bench_tree(name, Path(root).resolve(), sub, args))
        print(report(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
