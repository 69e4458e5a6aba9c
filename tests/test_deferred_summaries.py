"""Deferred summary fields (project/deferred.py): what a function returns, what a call passes,
and a few more are computed when the project view first reads them. The answers must be the
same as with every field computed at once, whichever way a summary was made (here, in a
worker, read back from the cache with some fields absent)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import libcst as cst
import pytest

from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.config import Config
from torchsync_lint.project import deferred, summary
from torchsync_lint.project.deferred import DeferredRecord
from torchsync_lint.project.session import Session

DATA = Path(__file__).parent / "data" / "entry_points"
ROOT = Path(__file__).resolve().parent.parent


def _counting(calls: list):
    def compute(field):
        calls.append(field)
        return len(calls)

    return compute


def test_a_deferred_field_is_computed_once_on_first_read_and_only_then():
    calls: list = []
    record = DeferredRecord({"params": ["x"]}, ("returns",), _counting(calls))
    assert calls == [] and "returns" in record and "other" not in record
    assert dict(record) == {"params": ["x"]}  # iteration and equality: the computed fields
    assert json.loads(json.dumps(record)) == {"params": ["x"]}  # a cache entry: the same
    assert record["returns"] == 1 and record.get("returns") == 1 and calls == ["returns"]
    assert dict(record) == {"params": ["x"], "returns": 1}
    assert record.get("absent", "default") == "default"


def test_a_field_already_present_is_not_deferred_and_pickling_computes_the_rest():
    calls: list = []
    record = DeferredRecord({"returns": {"k": "host"}}, ("returns", "step"), _counting(calls))
    assert record["returns"] == {"k": "host"} and calls == []
    copy = pickle.loads(pickle.dumps(record))
    assert type(copy) is dict and copy == {"returns": {"k": "host"}, "step": 1}


def _summaries(path: Path) -> tuple[dict, dict]:
    text = path.read_text(encoding="utf-8")
    eager = summary.summarize(ModuleAnalysis(cst.parse_module(text), text), path.name)
    analysis = ModuleAnalysis(cst.parse_module(text), text)
    summarizer = summary.Summarizer(analysis, path.name, lambda kind, key: lambda field: summarizer.deferred_field(kind, key, field))
    return eager, summarizer.run()


def test_a_deferred_summary_completed_equals_the_summary_computed_at_once():
    modules = sorted((ROOT / "fixtures").rglob("*.py"))[:40] + sorted((ROOT / "tests" / "data").rglob("*.py"))[:40]
    deferred_fields = 0
    for path in modules:
        eager, lazy = _summaries(path)
        deferred_fields += sum(len([f for f in r._names if not dict.__contains__(r, f)]) for r in [*lazy["functions"].values(), *lazy["calls"]])
        assert deferred.complete(lazy) == eager, path
        # read in another order (the calls last to first): the same answers
        _, again = _summaries(path)
        for record in reversed(again["calls"]):
            record["args"], record["kwargs"]
        assert deferred.complete(again) == eager, path
    assert deferred_fields > 100  # the modules above do defer fields


def test_the_per_step_fields_are_deferred_and_only_their_first_read_builds_the_hot_loop_analysis():
    # (no accelerator named here: no loop of it is asked whether it feeds one)
    text = (
        "from proj import engine\n\n\n"
        "def train(model, loader, opt):\n"
        "    for x in loader:\n"
        "        loss = model(x).sum()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        engine.log(loss)\n"
    )
    eager = summary.summarize(ModuleAnalysis(cst.parse_module(text), text), "train.py")
    analysis = ModuleAnalysis(cst.parse_module(text), text)
    summarizer = summary.Summarizer(analysis, "train.py", lambda kind, key: lambda field: summarizer.deferred_field(kind, key, field))
    lazy = summarizer.run()
    assert "hot" not in analysis.__dict__  # (ModuleAnalysis.hot is a cached property)
    (call,) = [c for c in lazy["calls"] if c["callee"] == "proj.engine.log"]
    assert call["hot"] == "yes" and "hot" in analysis.__dict__
    assert lazy["functions"]["train"]["epoch"] is True
    assert deferred.complete(lazy) == eager


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(DATA / "helper-item" / "project", root)
    return root


def _codes(result) -> list[tuple]:
    return sorted((f.line, f.column, f.code) for f in result.findings)


def test_a_field_no_answer_needs_is_never_computed(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "unused.py").write_text("import utils\n\n\ndef never_called(t):\n    return utils.clean(t) * 2\n")
    asked = []
    real = summary.Summarizer.deferred_field
    monkeypatch.setattr(summary.Summarizer, "deferred_field", lambda self, kind, key, field: asked.append((self.relpath, kind, key, field)) or real(self, kind, key, field))
    session = Session(root, Config(), use_cache=False)
    assert _codes(session.lint(str(root / "utils.py"))) == [(5, 12, "TSL101")]
    assert asked  # the view did read some deferred fields
    assert ("unused.py", "fn", "never_called", "returns") not in asked


def test_summaries_read_back_from_the_cache_compute_their_absent_fields_again(tmp_path):
    root = _project(tmp_path)
    expected = {p: _codes(Session(root, Config(), use_cache=False).lint(str(root / p))) for p in ("train.py", "utils.py")}
    Session(root, Config()).lint(str(root / "utils.py"))  # writes summaries with some fields absent
    cached = [json.loads(p.read_text().split("\n", 1)[1]) for p in (root / ".torchsync_cache").rglob("summaries/*/*.json")]
    assert cached and any(f not in r for s in cached for r in s["functions"].values() for f in deferred.FUNCTION_FIELDS)
    # an edit elsewhere invalidates the results, not the summaries: they come from the cache
    (root / "train.py").write_text((root / "train.py").read_text() + "\n")
    session = Session(root, Config())
    assert {p: _codes(session.lint(str(root / p))) for p in ("train.py", "utils.py")} == expected


def test_an_edit_that_changes_only_what_a_function_returns_reaches_its_callers(tmp_path):
    root = _project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    utils = root / "utils.py"
    session.lint(str(utils))
    # the same lines, the same calls: only the value `to_scalar` returns differs
    changed = session.set_source(str(utils), utils.read_text().replace("return t.item()", "return t + 0  "))
    assert changed == {"train.py", "utils.py"}


def test_a_call_s_arguments_are_computed_one_by_one():
    calls: list = []

    def arg(name):
        i = int(name[-1])
        return calls.append(i) or {"k": f"a{i}"}

    args = deferred.DeferredList(["a0", "a1", "a2"], arg)
    assert len(args) == 3 and calls == []
    assert args[1] == {"k": "a1"} and calls == [1]
    assert args[-1] == {"k": "a2"} and args[1:] == [{"k": "a1"}, {"k": "a2"}] and calls == [1, 2]
    assert list(args) == [{"k": "a0"}, {"k": "a1"}, {"k": "a2"}] and calls == [1, 2, 0]
    assert pickle.loads(pickle.dumps(args)) == [{"k": "a0"}, {"k": "a1"}, {"k": "a2"}]
    kwargs = deferred.DeferredDict({}, ("x3", "y4"), arg)
    assert "x3" in kwargs and len(kwargs) == 2 and calls == [1, 2, 0]
    assert kwargs["y4"] == {"k": "a4"} and calls[-1] == 4
    assert dict(kwargs.items()) == {"x3": {"k": "a3"}, "y4": {"k": "a4"}} and sorted(kwargs) == ["x3", "y4"]


def test_a_cache_entry_holds_computed_values_never_placeholders():
    values = {"0": {"k": "host"}, "1": {"k": "device"}}
    record = DeferredRecord({"callee": "f"}, ("args",), lambda field: deferred.DeferredList(["0", "1"], values.__getitem__))
    summary = {"functions": {}, "calls": [record]}
    assert deferred.computed(summary)["calls"] == [{"callee": "f"}]
    record["args"][1]  # the view read the second argument
    assert json.loads(json.dumps(deferred.computed(summary)))["calls"] == [{"callee": "f", "args": [{"k": "host"}, {"k": "device"}]}]


def test_a_class_s_attributes_are_computed_one_by_one_and_read_as_the_table_computed_at_once():
    values = {"model": {"k": "device"}, "steps": None}  # `steps`: no value we can name
    asked: list = []
    attrs = deferred.DeferredAttrs({}, ("model", "steps"), lambda attr: asked.append(attr) or values[attr])
    assert asked == [] and dict(attrs.items()) == {"model": {"k": "device"}} and asked == ["model", "steps"]
    fresh = deferred.DeferredAttrs({}, ("model", "steps"), lambda attr: asked.append(attr) or values[attr])
    asked.clear()
    assert "model" in fresh and asked == ["model"]
    assert fresh.get("steps") is None and "steps" not in fresh and fresh.get("other") is None
    with pytest.raises(KeyError):
        fresh["steps"]
    summary = {"functions": {}, "calls": [], "classes": {"C": {"attrs": fresh, "attr_names": ["model", "steps"]}}}
    assert json.loads(json.dumps(deferred.computed(summary)))["classes"]["C"]["attrs"] == {"model": {"k": "device"}}
    assert deferred.complete(summary)["classes"]["C"]["attrs"] == {"model": {"k": "device"}} and asked == ["model", "steps"]


def test_a_class_s_attributes_read_back_from_the_cache_are_computed_again_when_absent(tmp_path):
    root = tmp_path / "objects"
    shutil.copytree(DATA.parent / "objects_project", root, ignore=shutil.ignore_patterns(".torchsync_cache", "__pycache__"))
    modules = sorted(str(p) for p in root.rglob("*.py"))
    expected = {m: _codes(Session(root, Config(), use_cache=False).lint(m)) for m in modules}
    assert any(expected.values())
    script = str(root / "src" / "op" / "train.py")  # (its scope: every module it imports, and their classes)
    Session(root, Config()).lint(script)  # writes the summaries: attributes not read yet are absent
    cached = [json.loads(p.read_text().split("\n", 1)[1]) for p in (root / ".torchsync_cache").rglob("summaries/*/*.json")]
    assert any(set(c["attr_names"]) - set(c["attrs"]) for s in cached for c in s["classes"].values())
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "\n")  # (no result is reused)
    session = Session(root, Config())
    assert {m: _codes(session.lint(m)) for m in modules} == expected


def test_a_method_call_on_a_library_object_is_not_recorded_and_its_receiver_never_evaluated(monkeypatch):
    """`agent.update(...)` on whichever of two project classes was built is recorded for the
    view to resolve; `np.random.shuffle(...)` (a library's, named through an import) is not,
    and the kind of `np.random` is never worked out for it."""
    source = (
        "import numpy as np\nfrom algos import A, B\n\n\n"
        "def run(flag, xs):\n    if flag:\n        agent = A()\n    else:\n        agent = B()\n    agent.update(xs)\n    np.random.shuffle(xs)\n"
    )
    analysis = ModuleAnalysis(cst.parse_module(source), source)
    asked = []
    real = type(analysis.values).kind
    monkeypatch.setattr(type(analysis.values), "kind", lambda self, node: asked.append(cst.Module([]).code_for_node(node)) or real(self, node))
    calls = summary.summarize(analysis, "train.py")["calls"]
    assert [c["callee"] for c in calls if c["callee"].startswith("%")] == ["%.update"]
    assert "agent" in asked and "np.random" not in asked
