#!/usr/bin/env python
"""Round-trip check of `torchsync-lint --fix --unsafe-fixes` on real code (too slow for tests).

For each target (default: this repo's `fixtures/` and the installed torch package's own
source), copy its .py files to a temporary directory, run the CLI twice with
`--fix --unsafe-fixes --select ALL --isolated`, and check that:
  - every file that compiled before the fix still parses with libcst and `compile()`s;
  - the second run changes no byte (fixing is idempotent) and fixes nothing;
  - no file outside the fixed ones changed.
The originals are never touched. Exit 0 when every check passes.

    python scripts/check_fix_roundtrip.py [--torch PATH] [--only fixtures|torch] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _default_torch() -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).parent if spec and spec.origin else None


def _copy_py(src: Path, dst: Path) -> None:
    def ignore(directory, names):
        return [n for n in names if not os.path.isdir(os.path.join(directory, n)) and not n.endswith(".py")]

    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def _snapshot(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).digest() for p in sorted(tree.rglob("*.py")) if p.is_file()}


def _compiles(data: bytes, path: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, path, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def _parses(data: bytes) -> bool:
    import libcst as cst

    try:
        cst.parse_module(data)
        return True
    except Exception:  # noqa: BLE001 - any parser failure counts
        return False


def _run(tree: Path) -> tuple[float, int, str]:
    cmd = [sys.executable, "-m", "torchsync_lint", "--fix", "--unsafe-fixes", "--select", "ALL", "--isolated", "-q", str(tree)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc.returncode, proc.stdout + proc.stderr


def _summary_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if re.match(r"^(Fixed \d+|\d+ findings? remains?)", ln)]
    return " | ".join(lines) or "(no summary)"


def check(name: str, source: Path, work: Path) -> bool:
    tree = work / name
    _copy_py(source, tree)
    before_bytes = {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*.py")) if p.is_file()}
    compiled_before = {rel for rel, data in before_bytes.items() if _compiles(data, rel)}
    print(f"== {name}: {len(before_bytes)} files copied from {source} ({len(compiled_before)} compile)", flush=True)

    t1, rc1, out1 = _run(tree)
    after1 = _snapshot(tree)
    changed = sorted(rel for rel, digest in after1.items() if hashlib.sha256(before_bytes[rel]).digest() != digest)
    print(f"run 1: {t1:.1f}s, exit {rc1}: {_summary_line(out1)}")
    print(f"       {len(changed)} files changed" + (": " + ", ".join(changed[:10]) + (" ..." if len(changed) > 10 else "") if changed else ""))
    problems = [ln for ln in out1.splitlines() if "fix refused" in ln or "did not converge" in ln or "cannot write" in ln or "internal error" in ln]
    for ln in problems[:20]:
        print(f"       {ln}")

    ok = True
    not_parsing, not_compiling = [], []
    for rel in changed:
        data = (tree / rel).read_bytes()
        if not _parses(data):
            not_parsing.append(rel)
        if rel in compiled_before and not _compiles(data, rel):
            not_compiling.append(rel)
    print(f"       changed files that no longer parse: {len(not_parsing)}; no longer compile: {len(not_compiling)}")
    for rel in not_parsing + not_compiling:
        print(f"         BROKEN {rel}")
    ok &= not not_parsing and not not_compiling
    if any("internal error" in ln for ln in problems):
        ok = False

    t2, rc2, out2 = _run(tree)
    after2 = _snapshot(tree)
    changed2 = sorted(rel for rel in after2 if after2[rel] != after1.get(rel))
    fixed2 = re.search(r"^Fixed (\d+)", out2, re.M)
    print(f"run 2: {t2:.1f}s, exit {rc2}: {_summary_line(out2)}")
    print(f"       files changed by the second run: {len(changed2)}" + (": " + ", ".join(changed2[:10]) if changed2 else ""))
    ok &= not changed2 and (fixed2 is None or fixed2.group(1) == "0")
    print(f"{name}: {'OK' if ok else 'FAILED'}\n", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torch", type=Path, default=_default_torch(), help="the torch package directory to copy")
    parser.add_argument("--fixtures", type=Path, default=ROOT / "fixtures")
    parser.add_argument("--only", choices=("fixtures", "torch"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    args = parser.parse_args(argv)
    targets = []
    if args.only in (None, "fixtures"):
        targets.append(("fixtures", args.fixtures))
    if args.only in (None, "torch"):
        if args.torch is None:
            print("torch is not installed: skipping the torch target", file=sys.stderr)
        else:
            targets.append(("torch", args.torch))
    work = Path(tempfile.mkdtemp(prefix="tsl-roundtrip-"))
    try:
        results = [check(name, src, work) for name, src in targets]
    finally:
        if args.keep:
            print(f"copies kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
