#!/usr/bin/env python
"""Fuzz `check` and `--fix --unsafe-fixes` with many generated programs (on demand; CI runs a
few hundred in tests/test_fuzz.py).

Programs come from tests/fuzz_programs.py (seeded mutations of the fixtures and the rules'
embedded cases, optionally hypothesmith statements spliced into them); each is checked with
``check_program``: no exception, no rule crash (TSL903), no TSL900 on code that compiles, the
fix converges, compiles and is idempotent, and no fix is refused. Every failing program is
written to ``--out`` with its problems, for minimising into tests/data/fuzz_repros/.

    python scripts/fuzz_fix.py --count 5000 --seed 1 --jobs 2 --out /tmp/fuzz-out
    python scripts/fuzz_fix.py --count 300 --hypothesmith 100
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.fuzz_programs import check_program, generate, grammar_programs  # noqa: E402


def _check(item: tuple[str, str]) -> tuple[str, str, list[str], float]:
    name, source = item
    start = time.perf_counter()
    problems = check_program(source, name + ".py")
    return name, source, problems, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=5000, help="mutated programs (default 5000)")
    parser.add_argument("--hypothesmith", type=int, default=0, metavar="N", help="also N programs with hypothesmith code spliced in")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="directory for failing programs")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    programs = generate(args.count, args.seed)
    if args.hypothesmith:
        programs += grammar_programs(args.hypothesmith, args.seed)
    generated = time.perf_counter() - start
    kinds: collections.Counter[str] = collections.Counter()
    failing: list[tuple[str, str, list[str]]] = []
    slowest: list[tuple[float, str]] = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for done, (name, source, problems, seconds) in enumerate(pool.map(_check, programs, chunksize=8), 1):
            if done % 500 == 0:
                print(f"... {done}/{len(programs)} checked, {len(failing)} failing", file=sys.stderr, flush=True)
            slowest.append((seconds, name))
            if problems:
                failing.append((name, source, problems))
                for p in problems:
                    kinds[p.split(":")[0].split("(")[0].strip()] += 1
    elapsed = time.perf_counter() - start
    if args.out and failing:
        os.makedirs(args.out, exist_ok=True)
        for name, source, problems in failing:
            with open(os.path.join(args.out, name[:150] + ".py"), "w", encoding="utf-8") as fh:
                fh.write("".join(f"# PROBLEM: {p}\n" for p in problems) + source)
    print(f"{len(programs)} programs (generated in {generated:.1f} s), checked in {elapsed - generated:.1f} s with {args.jobs} jobs")
    print(f"{len(failing)} failing programs")
    for kind, n in kinds.most_common():
        print(f"  {n:5d}  {kind}")
    for name, _, problems in failing[:20]:
        print(f"- {name}: {problems[0][:200]}")
    print("slowest: " + ", ".join(f"{name} {s:.2f} s" for s, name in sorted(slowest, reverse=True)[:3]))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
