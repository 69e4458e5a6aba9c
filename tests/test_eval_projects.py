"""benchmarks/eval_projects.py: scoring of a labelled multi-file corpus, on synthetic findings
and end to end on a toy project written for this repository (tests/data/eval_projects/)."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "eval_projects"
SCRIPT = ROOT / "benchmarks" / "eval_projects.py"


@pytest.fixture(scope="module")
def ev():
    spec = importlib.util.spec_from_file_location("eval_projects", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def label(file, line, code, scope="local", **extra):
    return {"project": "p", "file": file, "line": line, "code": code, "gated": False, "why": "w",
            "scope": scope, "confidence": "high", **extra}


def test_score_matches_by_project_file_line_code(ev):
    labels = [
        label("a.py", 3, "TSL101"),
        label("a.py", 3, "TSL101"),  # two sub-expressions on one line: two hazards
        label("a.py", 5, "TSL301", scope="cross-module"),
        label("b.py", 7, "TSL201", scope="library"),
        label("b.py", 9, "TSL103", ambiguous=True),
    ]
    found = {
        ("p", "a.py", 3, "TSL101"): 1,  # one of the two
        ("p", "a.py", 5, "TSL302"): 1,  # right line, wrong code: FP, and TSL301 is an FN
        ("p", "b.py", 7, "TSL201"): 2,  # a duplicate finding is a false positive
        ("p", "b.py", 9, "TSL103"): 1,  # on an ambiguous label: counted neither way
        ("q", "a.py", 3, "TSL101"): 1,  # another project: FP
    }
    s = ev.score(labels, found)
    assert s.ambiguous_hits == 1 and s.findings == 6
    t = ev.tables(s)
    assert t["by_code"]["TSL101"] == {"tp": 1, "fp": 1, "fn": 1, "precision": 0.5, "recall": 0.5}
    assert t["by_code"]["TSL301"] == {"tp": 0, "fp": 0, "fn": 1, "precision": None, "recall": 0.0}
    assert t["by_code"]["TSL302"]["fp"] == 1 and "TSL103" not in t["by_code"]
    assert t["by_family"]["TSL2xx"] == {"tp": 1, "fp": 1, "fn": 0, "precision": 0.5, "recall": 1.0}
    assert t["by_family"]["all"] == {"tp": 2, "fp": 3, "fn": 2, "precision": 0.4, "recall": 0.5}
    assert t["by_scope"] == {
        "local": {"tp": 1, "fn": 1, "recall": 0.5},
        "cross-module": {"tp": 0, "fn": 1, "recall": 0.0},
        "library": {"tp": 1, "fn": 0, "recall": 1.0},
    }
    assert set(t["by_project"]) == {"p", "q"} and t["by_project"]["q"]["fp"] == 1


def test_label_problems_catch_typos(ev, tmp_path):
    shutil.copytree(DATA / "corpus", tmp_path / "corpus")
    project = ev.Project("toyproj", [
        {**label("toy/train.py", 17, "TSL101"), "project": "toyproj"},
        {**label("toy/train.py", 999, "TSL101"), "project": "toyproj"},
        {**label("toy/nope.py", 1, "TSL101"), "project": "toyproj"},
        {**label("toy/train.py", 17, "TSL1O1", scope="global"), "project": "toyproj"},
        {"project": "toyproj", "file": "toy/train.py", "line": "17", "code": "TSL101"},
    ])
    problems = ev.label_problems(project, tmp_path / "corpus")
    text = "\n".join(problems)
    assert "#0" not in text
    assert "#1" in text and "line out of range" in text
    assert "#2" in text and "no such file" in text
    assert "code is not TSLnnn" in text and "scope must be one of" in text
    assert "#4" in text and "field 'line' missing or not int" in text and "field 'scope'" in text


def test_lint_paths_from_sources(ev, tmp_path):
    labels_dir = tmp_path / "labels"
    (labels_dir / "proj").mkdir(parents=True)
    (labels_dir / "proj" / "labels.json").write_text("[]")
    (labels_dir / "proj" / "SOURCES.md").write_text("# proj\n\nlint: src\nlint: tools/train.py\n")
    (labels_dir / "other").mkdir()
    (labels_dir / "other" / "labels.json").write_text("[]")
    projects = ev.load_projects(labels_dir)
    assert [(p.slug, p.lint) for p in projects] == [("other", ["."]), ("proj", ["src", "tools/train.py"])]
    assert ev._in_lint_paths("src/pkg/engine.py", ["src"])
    assert not ev._in_lint_paths("srcx/engine.py", ["src"])
    assert ev._in_lint_paths("anything.py", ["."])


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "--corpus", str(DATA / "corpus"),
                           "--labels-dir", str(DATA / "labels"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_toy_project_end_to_end():
    """The toy project's labels are complete (every hazard of its five modules); the local ones
    are what any version of the linter must find, the cross-module ones what the project view
    should add: the test pins the local part and the totals, not today's cross-module misses."""
    proc = run("--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    labels = json.loads((DATA / "labels" / "toyproj" / "labels.json").read_text())
    local = sum(1 for d in labels if d["scope"] == "local")
    cross = sum(1 for d in labels if d["scope"] == "cross-module")
    assert (local, cross) == (2, 5)
    assert out["by_scope"]["local"] == {"tp": local, "fn": 0, "recall": 1.0}
    assert out["by_scope"]["cross-module"]["tp"] + out["by_scope"]["cross-module"]["fn"] == cross
    total = out["by_family"]["all"]
    assert total["fp"] == 0 and total["tp"] + total["fn"] == len(labels)
    assert out["by_code"]["TSL102"] == {"tp": 1, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0}
    assert out["lint_errors"] == []
    assert [d["code"] for d in out["false_positives"]] == []
    assert {(d["file"], d["line"]) for d in out["false_negatives"]} <= {(d["file"], d["line"]) for d in labels}


def test_details_file_keeps_lists_off_stdout(tmp_path):
    details = tmp_path / "details.txt"
    proc = run("--details", str(details))
    assert proc.returncode == 0, proc.stderr
    assert "TSL1xx" in proc.stdout and "local" in proc.stdout
    assert "false negatives" not in proc.stdout and "why" not in proc.stdout
    text = details.read_text()
    assert text.startswith("false positives (0):") and "false negatives (" in text


def test_check_labels_never_imports_the_linter():
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['eval_projects.py', '--check-labels', '--show', '--corpus', {str(DATA / 'corpus')!r},"
        f" '--labels-dir', {str(DATA / 'labels')!r}]\n"
        f"try:\n    runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "assert not any(m.startswith('torchsync_lint') for m in sys.modules), 'linter imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "toyproj/toy/meters.py:7 TSL101 cross-module" in proc.stdout
    assert "self.total += value.item() * n" in proc.stdout
    assert "1 projects, 7 labels, 0 problems" in proc.stdout


def test_a_positive_and_an_ambiguous_label_on_one_key(ev):
    """One hazard on a line plus a judgement call on the same line and code (a second
    sub-expression a tool may or may not flag): one finding is a TP, a second counts neither
    way, none is an FN scored with the positive label's scope."""
    labels = [
        label("a.py", 3, "TSL103", scope="library", ambiguous=True),
        label("a.py", 3, "TSL103", scope="cross-module"),
    ]
    key = ("p", "a.py", 3, "TSL103")
    two = ev.score(labels, {key: 2})
    assert (sum(two.tp.values()), sum(two.fp.values()), two.ambiguous_hits) == (1, 0, 1)
    none = ev.score(labels, {})
    assert ev.tables(none)["by_scope"]["cross-module"] == {"tp": 0, "fn": 1, "recall": 0.0}
    assert ev.tables(none)["by_scope"]["library"] == {"tp": 0, "fn": 0, "recall": None}
