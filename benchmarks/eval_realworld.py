"""Precision and recall of TSL101-TSL105 on real training scripts this project did not write.

The scripts themselves are third-party code and are not committed: benchmarks/realworld/
SOURCES.md lists each one (repository, path, commit) and labels.json holds our hand labels
(one entry per hazard: file, line, code, gated, why). Fetch the files into a directory,
named as in SOURCES.md, then run:

    python benchmarks/eval_realworld.py CORPUS_DIR [--labels benchmarks/realworld/labels.json]

A finding matches a label with the same file, line and code. Lines that the labels mark as
judgement calls (`ambiguous` in labels.json) count neither way.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from torchsync_lint.api import lint_file
from torchsync_lint.config import Config

CODES = ("TSL101", "TSL102", "TSL103", "TSL104", "TSL105")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--labels", type=Path, default=Path(__file__).parent / "realworld" / "labels.json")
    args = parser.parse_args()
    labels = json.loads(args.labels.read_text())
    truth = collections.Counter((d["file"], d["line"], d["code"]) for d in labels if not d.get("ambiguous"))
    ambiguous = {(d["file"], d["line"], d["code"]) for d in labels if d.get("ambiguous")}
    config = Config(select=list(CODES))
    got: collections.Counter = collections.Counter()
    files = sorted(args.corpus.glob("*.py"))
    for path in files:
        result = lint_file(str(path), config)
        for f in result.findings:
            key = (path.name, f.line, f.code)
            if key not in ambiguous:
                got[key] += 1
    tp = got & truth
    fp = got - truth
    fn = truth - got
    print(f"{len(files)} files, {sum(truth.values())} labelled hazards, {sum(got.values())} findings\n")
    print(f"{'code':7} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for code in (*CODES, "all"):
        sel = (lambda k: True) if code == "all" else (lambda k, c=code: k[2] == c)
        t, p, n = (sum(v for k, v in c.items() if sel(k)) for c in (tp, fp, fn))
        prec = f"{t / (t + p):.2f}" if t + p else "-"
        rec = f"{t / (t + n):.2f}" if t + n else "-"
        print(f"{code:7} {t:4d} {p:4d} {n:4d} {prec:>10} {rec:>8}")
    if fp:
        print("\nfalse positives:")
        for key in sorted(fp):
            print("  ", *key)
    if fn:
        print("\nfalse negatives:")
        why = {(d["file"], d["line"], d["code"]): d["why"] for d in labels}
        for key in sorted(fn):
            print("  ", *key, "-", why.get(key, "")[:90])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
