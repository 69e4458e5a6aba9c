#!/usr/bin/env python
"""Run every fixture before and after the fixer, with torch on the CPU, and compare what it
prints (the `RESULT {...}` line): safe fixes must not change it, and unsafe ones are shown.

On a CPU `device` resolves to "cpu", so this checks what a CPU run can see: a fix that raises
(`device=` given a tensor, a keyword the call does not take), changes a dtype or a value, or
changes the data a loader yields (an `IterableDataset` read by several workers). Effects that
need a GPU (a CPU generator filling device memory, an asynchronous copy racing a host write)
are not observable here; tests/test_fix_safety.py pins that those fixes are withheld.

    python scripts/check_fix_runtime.py [--steps 3] [FIXTURE ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _result(path: str, steps: int) -> tuple[str, object]:
    """("ok", RESULT payload) or ("error", the last lines of stderr)."""
    proc = subprocess.run([sys.executable, path, "--steps", str(steps)], capture_output=True, text=True, timeout=600, cwd=os.path.dirname(path))
    if proc.returncode != 0:
        return "error", proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    return "ok", json.loads(lines[-1].split(" ", 1)[1]) if lines else None


def main(argv: list[str] | None = None) -> int:
    from torchsync_lint.fixer import fix_source

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fixtures", nargs="*")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    paths = args.fixtures or sorted(p for p in glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True) if not p.endswith(".fixed.py"))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
            rel = os.path.relpath(path, ROOT)
            before = _result(path, args.steps)
            if before[0] == "error" and "ModuleNotFoundError" in " ".join(before[1]):
                print(f"{rel}: skipped ({before[1][0]})")
                continue
            row = [rel]
            for level, unsafe in (("safe", False), ("unsafe", True)):
                fixed = fix_source(source, path, unsafe=unsafe).new_source
                if fixed == source:
                    row.append(f"{level}: no change")
                    continue
                copy = os.path.join(tmp, os.path.basename(path))
                with open(copy, "w", encoding="utf-8") as fh:
                    fh.write(fixed)
                after = _result(copy, args.steps)
                same = after == before
                row.append(f"{level}: {'same RESULT' if same else f'DIFFERENT {after} vs {before}'}")
                if level == "safe" and not same:
                    bad += 1
            print("; ".join(row))
    print(f"{bad} fixture(s) whose safe fixes changed the result")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
