"""Precision and recall of every rule on a labelled corpus of whole multi-file projects.

The projects are public training repositories this project did not write. Their code is not
committed: it lives under a corpus directory (default /work/corpora/projects/<slug>/). What is
committed, per project, is benchmarks/projects/<slug>/:

- SOURCES.md: repository, commit, what is linted. A line ``lint: PATH`` (relative to the
  project root; one or more lines) names the linted part of the tree; without one the whole
  project root is linted.
- labels.json: a JSON list, one entry per hazard, written by reading the code before the
  linter was ever run on it: {"project", "file" (relative to the project root), "line",
  "code", "gated", "why", "scope": "local" | "cross-module" | "library", "confidence",
  "ambiguous" (optional: a judgement call, counted neither way)}.
- NEGATIVES.md: the look-alikes decided not to be hazards.

Each project is linted as a user would lint it (``lint_paths([root], config_for([root]))``)
with every rule selected. A finding matches a label with the same project, file, line and
code; findings on an ambiguous label's line and code count neither way.

    python benchmarks/eval_projects.py [--corpus DIR] [--project SLUG ...]
           [--details FILE] [--json]
    python benchmarks/eval_projects.py --check-labels [--show]   # labels only, no linting

``--details FILE`` writes the false positives and false negatives to FILE, so the aggregate
table can be read without seeing them. ``--check-labels`` validates the labels (fields,
files, line numbers) without importing the linter; ``--show`` prints each label's source line.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

LABELS_DIR = Path(__file__).parent / "projects"
DEFAULT_CORPUS = Path("/work/corpora/projects")
SCOPES = ("local", "cross-module", "library")
FAMILIES = {"TSL1": "TSL1xx", "TSL2": "TSL2xx", "TSL3": "TSL3xx"}
REQUIRED = {"project": str, "file": str, "line": int, "code": str, "gated": bool, "why": str,
            "scope": str, "confidence": str}
LINT_LINE = re.compile(r"^lint:\s*(\S+)\s*$", re.MULTILINE)

Key = tuple  # (project, file, line, code)


# -- labels ------------------------------------------------------------------------------------
@dataclass
class Project:
    slug: str
    labels: list[dict]
    lint: list[str] = field(default_factory=lambda: ["."])  # relative to the project root


def load_projects(labels_dir: Path, only: list[str] | None = None) -> list[Project]:
    """Every benchmarks/projects/<slug>/ holding a labels.json (an empty list is a project
    with no hazards), sorted by slug."""
    projects = []
    for labels_file in sorted(labels_dir.glob("*/labels.json")):
        slug = labels_file.parent.name
        if only and slug not in only:
            continue
        sources = labels_file.parent / "SOURCES.md"
        lint = LINT_LINE.findall(sources.read_text(encoding="utf-8")) if sources.is_file() else []
        projects.append(Project(slug, json.loads(labels_file.read_text(encoding="utf-8")), lint or ["."]))
    missing = set(only or ()) - {p.slug for p in projects}
    if missing:
        raise SystemExit(f"no labels for project(s): {', '.join(sorted(missing))}")
    return projects


def label_problems(project: Project, corpus: Path | None) -> list[str]:
    """Malformed entries, and (when the tree is at hand) files or lines that do not exist:
    a typo there would silently turn into a false negative."""
    problems = []
    root = corpus / project.slug if corpus else None
    for n, label in enumerate(project.labels):
        where = f"{project.slug} label #{n} ({label.get('file')}:{label.get('line')} {label.get('code')})"
        for name, kind in REQUIRED.items():
            if not isinstance(label.get(name), kind) or (kind is int and isinstance(label.get(name), bool)):
                problems.append(f"{where}: field {name!r} missing or not {kind.__name__}")
        if label.get("project") != project.slug:
            problems.append(f"{where}: project is {label.get('project')!r}, expected {project.slug!r}")
        if not re.fullmatch(r"TSL\d{3}", str(label.get("code"))):
            problems.append(f"{where}: code is not TSLnnn")
        if label.get("scope") not in SCOPES:
            problems.append(f"{where}: scope must be one of {SCOPES}")
        if label.get("confidence") not in ("high", "medium"):
            problems.append(f"{where}: confidence must be high or medium")
        if root is not None and root.is_dir() and isinstance(label.get("file"), str):
            path = root / label["file"]
            if not path.is_file():
                problems.append(f"{where}: no such file in {root}")
            elif not _in_lint_paths(label["file"], project.lint):
                problems.append(f"{where}: file is outside the linted paths {project.lint}")
            elif isinstance(label.get("line"), int):
                count = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
                if not 1 <= label["line"] <= count:
                    problems.append(f"{where}: line out of range (file has {count} lines)")
    return problems


def _in_lint_paths(file: str, lint: list[str]) -> bool:
    parts = Path(file).parts
    return any(p in (".", "") or parts[: len(Path(p).parts)] == Path(p).parts for p in lint)


def key_of(label: dict) -> Key:
    return (label["project"], label["file"], label["line"], label["code"])


# -- linting -----------------------------------------------------------------------------------
def lint_project(project: Project, corpus: Path, torchmetrics_version: str | None = None):
    """(findings, errors) of one project: findings as {key: [Finding, ...]}, errors as text.
    The linter is imported here only, so --check-labels never loads it."""
    from torchsync_lint.api import config_for, lint_paths

    root = (corpus / project.slug).resolve()
    paths = [str(root / p) for p in project.lint]
    config = config_for(paths)
    config.select, config.extend_select, config.ignore = ["ALL"], [], []
    if torchmetrics_version:
        config.torchmetrics_version = torchmetrics_version
    found: dict[Key, list] = collections.defaultdict(list)
    errors = []
    for result in lint_paths(paths, config):
        rel = Path(result.path).resolve().relative_to(root).as_posix()
        errors += [f"{project.slug}/{rel}:{e.line}: {e.code} {e.message}" for e in result.errors]
        for f in result.findings:
            found[(project.slug, rel, f.line, f.code)].append(f)
    return found, errors


# -- scoring -----------------------------------------------------------------------------------
@dataclass
class Score:
    tp: collections.Counter
    fp: collections.Counter
    fn: collections.Counter
    labels: dict  # key -> the label with that key (a counted one before an ambiguous one)
    findings: int
    ambiguous_hits: int  # findings dropped because they sit on an ambiguous label


def score(labels: list[dict], found: dict[Key, int]) -> Score:
    """Match findings (key -> count) against labels. Two labels with one key are two hazards
    (two sub-expressions on a line); a second finding for a one-label key is a false positive."""
    truth = collections.Counter(key_of(d) for d in labels if not d.get("ambiguous"))
    ambiguous = {key_of(d) for d in labels if d.get("ambiguous")}
    got = collections.Counter({k: n for k, n in found.items() if n})
    tp = got & truth
    rest = got - truth
    dropped = sum(n for k, n in rest.items() if k in ambiguous)
    fp = collections.Counter({k: n for k, n in rest.items() if k not in ambiguous})
    by_key = {}  # a key's scope and reason come from its counted label, if it has one
    for d in sorted(labels, key=lambda d: bool(d.get("ambiguous"))):
        by_key.setdefault(key_of(d), d)
    return Score(tp, fp, truth - got, by_key, sum(got.values()), dropped)


def family(code: str) -> str:
    return FAMILIES.get(code[:4], code[:4] + "xx")


def _row(s: Score, select) -> dict:
    t, p, n = (sum(v for k, v in c.items() if select(k)) for c in (s.tp, s.fp, s.fn))
    return {"tp": t, "fp": p, "fn": n,
            "precision": round(t / (t + p), 3) if t + p else None,
            "recall": round(t / (t + n), 3) if t + n else None}


def tables(s: Score) -> dict:
    keys = set(s.tp) | set(s.fp) | set(s.fn)
    codes = sorted({k[3] for k in keys})
    scope_of = lambda k: s.labels[k]["scope"] if k in s.labels else None  # noqa: E731
    return {
        "by_code": {c: _row(s, lambda k, c=c: k[3] == c) for c in codes},
        "by_family": {f: _row(s, lambda k, f=f: family(k[3]) == f)
                      for f in sorted({*FAMILIES.values(), *map(family, codes)})} | {"all": _row(s, lambda k: True)},
        # FPs carry no label, hence no scope: these rows are recall only.
        "by_scope": {sc: {k: v for k, v in _row(s, lambda k, sc=sc: scope_of(k) == sc).items()
                          if k in ("tp", "fn", "recall")} for sc in SCOPES},
        "by_project": {p: _row(s, lambda k, p=p: k[0] == p) for p in sorted({k[0] for k in keys})},
    }


def render(t: dict) -> str:
    out = []
    for title, rows in (("code", t["by_code"]), ("family", t["by_family"]), ("project", t["by_project"])):
        width = max([len(title), *map(len, rows)])
        out.append(f"{title:{width}} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>7}")
        for name, r in rows.items():
            out.append(f"{name:{width}} {r['tp']:4d} {r['fp']:4d} {r['fn']:4d} "
                       f"{_fmt(r['precision']):>10} {_fmt(r['recall']):>7}")
        out.append("")
    out.append(f"{'scope':12} {'TP':>4} {'FN':>4} {'recall':>7}   (false positives have no label, hence no scope)")
    for name, r in t["by_scope"].items():
        out.append(f"{name:12} {r['tp']:4d} {r['fn']:4d} {_fmt(r['recall']):>7}")
    return "\n".join(out)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def details(s: Score, messages: dict[Key, list[str]]) -> str:
    lines = [f"false positives ({sum(s.fp.values())}):"]
    for k in sorted(s.fp):
        for msg in (messages.get(k) or [""])[: s.fp[k]]:
            lines.append(f"  {k[0]}/{k[1]}:{k[2]} {k[3]} {msg}")
    lines.append(f"\nfalse negatives ({sum(s.fn.values())}):")
    for k in sorted(s.fn):
        label = s.labels[k]
        gated = " gated" if label.get("gated") else ""
        lines.append(f"  {k[0]}/{k[1]}:{k[2]} {k[3]} [{label['scope']}{gated}] {label['why']}")
    return "\n".join(lines) + "\n"


def _keys(counter: collections.Counter) -> list[dict]:
    return [{"project": k[0], "file": k[1], "line": k[2], "code": k[3], "count": n} for k, n in sorted(counter.items())]


# -- command line ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="directory holding <slug>/ trees")
    parser.add_argument("--labels-dir", type=Path, default=LABELS_DIR, help="directory holding <slug>/labels.json")
    parser.add_argument("--project", action="append", help="only this project (repeatable)")
    parser.add_argument("--details", type=Path, help="write the FP and FN lists here instead of stdout")
    parser.add_argument("--json", action="store_true", help="print the tables as JSON")
    parser.add_argument("--torchmetrics-version", help="pin TSL203's torchmetrics version (default: config/installed)")
    parser.add_argument("--check-labels", action="store_true", help="validate the labels only; never lint")
    parser.add_argument("--show", action="store_true", help="with --check-labels: print each label's source line")
    args = parser.parse_args(argv)

    projects = load_projects(args.labels_dir, args.project)
    corpus = args.corpus if args.corpus.is_dir() else None
    problems = [p for project in projects for p in label_problems(project, corpus)]
    for p in problems:
        print(f"label problem: {p}", file=sys.stderr)
    if args.check_labels:
        if args.show and corpus:
            _show(projects, corpus)
        n = sum(len(p.labels) for p in projects)
        print(f"{len(projects)} projects, {n} labels, {len(problems)} problems")
        return 1 if problems else 0
    if problems:
        return 2
    if corpus is None:
        raise SystemExit(f"corpus directory {args.corpus} not found (see SOURCES.md to rebuild it)")
    missing = [p.slug for p in projects if not (corpus / p.slug).is_dir()]
    if missing:
        raise SystemExit(f"not in {corpus}: {', '.join(missing)}")

    labels = [label for p in projects for label in p.labels]
    found, errors = {}, []
    for project in projects:
        f, e = lint_project(project, corpus, args.torchmetrics_version)
        found.update(f)
        errors += e
    s = score(labels, {k: len(v) for k, v in found.items()})
    messages = {k: [f.message for f in v] for k, v in found.items()}
    t = tables(s)
    n_amb = sum(1 for d in labels if d.get("ambiguous"))
    head = (f"{len(projects)} projects, {len(labels) - n_amb} labelled hazards ({n_amb} ambiguous, not counted), "
            f"{s.findings} findings ({s.ambiguous_hits} on ambiguous labels, not counted)")
    text_details = details(s, messages)
    if args.details:
        args.details.write_text(text_details, encoding="utf-8")
    if args.json:
        lists = {} if args.details else {"false_positives": _keys(s.fp), "false_negatives": _keys(s.fn)}
        print(json.dumps({"summary": head, "lint_errors": errors, **t, **lists}, indent=2))
    else:
        print(head + "\n")
        print(render(t))
        for e in errors:
            print(f"lint error: {e}")
        if not args.details:
            print("\n" + text_details, end="")
    return 0


def _show(projects: list[Project], corpus: Path) -> None:
    for project in projects:
        for label in sorted(project.labels, key=lambda d: (d["file"], d["line"], d["code"])):
            path = corpus / project.slug / label["file"]
            try:
                src = path.read_text(encoding="utf-8").splitlines()[label["line"] - 1].strip()
            except (OSError, IndexError):
                src = "<missing>"
            amb = " AMBIGUOUS" if label.get("ambiguous") else ""
            print(f"{project.slug}/{label['file']}:{label['line']} {label['code']} {label['scope']}{amb}\n    {src}")


if __name__ == "__main__":
    raise SystemExit(main())
