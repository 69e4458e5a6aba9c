"""The project view's table of call sites (ProjectView._caller_table): calls of objects are
resolved in rounds against the table of the round before, and a round computes again only the
calls whose last computation read an entry that changed (memo.ReadLog). The table must be the
one that computing every such call in every round gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.config import Config
from torchsync_lint.project.session import Session
from torchsync_lint.project.view import _MAX_DEPTH, ProjectView, _called_method, _strip

DATA = Path(__file__).parent / "data"
PROJECTS = [DATA / "objects_project", DATA / "split_project", *sorted(p for p in (DATA / "projects").iterdir() if p.is_dir())]


def _every_call_every_round(view: ProjectView) -> dict:
    """The table as the rounds build it when each round computes every call of an object."""
    direct: dict[str, list[tuple]] = {}
    through = []
    for path in sorted(view.summaries):
        for n, call in enumerate(view.summaries[path]["calls"]):
            for override in view.overrides(call.get("dispatch")):
                direct.setdefault(override, []).append((path, n, call, 1))
            if call["callee"].startswith(("^", "~", "@", "%")):
                through.append((path, n, call))
                continue
            for target in view.call_targets_of(call["callee"], path, call["bound"]):
                direct.setdefault(target[0], []).append((path, n, call, target[1]))
    for entries in direct.values():
        entries.sort(key=lambda e: (e[0], e[1]))
    table = direct
    for _ in range(_MAX_DEPTH if through else 0):
        view._callers = _strip(table)
        view._forget_answers()
        grown = {ref: list(entries) for ref, entries in direct.items()}
        for path, n, call in through:
            for target in view.call_targets_of(call["callee"], path, call["bound"], call.get("value")):
                grown.setdefault(target[0], []).append((path, n, call, target[1]))
        for entries in grown.values():
            entries.sort(key=lambda e: (e[0], e[1]))
        if grown == table:
            break
        table = grown
    view._forget_answers()
    return _strip(table)


@pytest.mark.parametrize("root", PROJECTS, ids=lambda p: p.name)
def test_the_table_is_the_one_every_round_computing_every_call_gives(root: Path) -> None:
    session = Session(root, Config(), use_cache=False)
    scopes = {}  # (each module's view holds its scope: project/demand.py)
    for rel in session.modules():
        if session.linked(rel):
            scopes.setdefault(session.scope(rel).modules, rel)
    assert scopes  # (each project here has linked modules)
    objects = 0
    for rel in scopes.values():
        summaries = session.view(rel).summaries
        objects += sum(c["callee"].startswith(("^", "~", "@", "%")) for s in summaries.values() for c in s["calls"])
        built = ProjectView(session.layout, summaries)
        built.callers("")
        reference = ProjectView(session.layout, summaries)
        assert built._callers == _every_call_every_round(reference), rel
    if root.name == "objects_project":
        assert objects > 5  # calls of objects: the rounds have work to do


def test_a_call_found_in_one_round_makes_another_call_resolvable_in_the_next(tmp_path: Path) -> None:
    # `o.run()` runs a method of what `helper` receives; the one call of `helper` is
    # `self.fn(w)`, itself a call of an object (what `Box.__init__` stored): found in a later
    # round, it makes `o.run()` resolvable in the round after
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a.py").write_text("class Worker:\n    def run(self):\n        return 1\n")
    (tmp_path / "helpers.py").write_text("def helper(o):\n    return o.run()\n")
    (tmp_path / "main.py").write_text(
        "from a import Worker\nfrom helpers import helper\n\n\n"
        "class Box:\n    def __init__(self, fn):\n        self.fn = fn\n\n    def go(self, w):\n        return self.fn(w)\n\n\n"
        "def main():\n    Box(helper).go(Worker())\n"
    )
    session = Session(tmp_path, Config(), use_cache=False)
    view = session.view("main.py")
    assert [(path, call["callee"]) for path, call, _ in view.callers("a.py:Worker.run")] == [("helpers.py", "^helpers.py:helper#0.run")]
    assert view._callers == _every_call_every_round(ProjectView(session.layout, view.summaries))


def test_a_method_no_project_class_defines_is_not_resolved(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a.py").write_text("class Worker:\n    def run(self):\n        return 1\n")
    (tmp_path / "helpers.py").write_text("def helper(o, x):\n    o.run()\n    return x.view(-1)\n")
    (tmp_path / "main.py").write_text("from a import Worker\nfrom helpers import helper\n\n\ndef main(t):\n    helper(Worker(), t)\n")
    view = Session(tmp_path, Config(), use_cache=False).view("main.py")
    callees = sorted(c["callee"] for c in view.summaries["helpers.py"]["calls"])
    assert callees == ["^helpers.py:helper#0.run", "^helpers.py:helper#1.view"]
    asked = []
    real = ProjectView.param_value
    monkeypatch.setattr(ProjectView, "param_value", lambda self, ref, index, bind=None: asked.append((ref, index)) or real(self, ref, index, bind))
    assert view.call_targets_of("^helpers.py:helper#1.view", "helpers.py", True) == []  # (no class here defines `view`)
    assert view.call_targets_of("^helpers.py:helper#0.run", "helpers.py", True) == [("a.py:Worker.run", 1)]
    assert asked == [("helpers.py:helper", 0)]


@pytest.mark.parametrize(("callee", "method"), [
    ("^pkg/train.py:fit#2.step", "step"), ("^pkg/train.py:Loop.run#1", "__call__"), ("^t.py:f#0.__call__", "__call__"),
    ("~pkg/m.py:Trainer.criterion", "__call__"), ("~pkg/m.py:Trainer.buffer.sample", "sample"), ("%", "__call__"), ("%.update", "update"),
])
def test_the_method_an_object_s_call_runs(callee: str, method: str) -> None:
    assert _called_method(callee) == method
