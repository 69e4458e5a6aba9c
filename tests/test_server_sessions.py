"""The language server's Workspace (server/workspace.py) and its project Sessions over time:
which sessions hold a buffer, which exist at all, when settings are re-read, and which texts
are linted (once)."""

from __future__ import annotations

import os

import pytest

from tests._server_project import HELPERS, TRAIN, make_project
from torchsync_lint.server.workspace import Workspace


def _codes(outcome) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in outcome.findings)


def _touch_settings(pyproject, text: str) -> None:
    """Rewrite a pyproject.toml so that its stamp (size, mtime) surely changes."""
    before = os.stat(pyproject).st_mtime_ns
    pyproject.write_text(text)
    os.utime(pyproject, ns=(before + 10**9, before + 10**9))


@pytest.fixture()
def project(tmp_path):
    return make_project(tmp_path / "demo")


def test_closing_a_buffer_clears_it_from_the_session_of_new_settings(project):
    """train.py is edited (not saved) to stop calling the helper every step; the settings change;
    helpers.py is linted under the new ones (a new Session, given train.py's buffer); train.py
    is closed: the file on disk counts again, and helpers.py gets its TSL101 back."""
    ws = Workspace(use_cache=False)
    train, helpers = str(project / "train.py"), str(project / "helpers.py")
    ws.open(train, TRAIN.replace("        log_loss(loss)\n", "    log_loss(loss)\n"), 1)
    ws.open(helpers, HELPERS, 1)
    assert ("TSL101", 2) not in _codes(ws.documents[helpers].outcome)
    _touch_settings(project / "pyproject.toml", '[project]\nname = "demo"\n\n[tool.torchsync-lint]\nignore = ["TSL303"]\n')
    ws.update(helpers, HELPERS + "# typed\n", 2)
    assert ("TSL101", 2) not in _codes(ws.lint(helpers)[0])
    outcomes = {o.path: o for o in ws.close(train)}
    assert ("TSL101", 2) in _codes(outcomes[helpers])


def test_settings_above_a_symlinked_directory_are_watched(tmp_path):
    """The settings are those of the real directory's pyproject.toml (as `check` finds it);
    editing that file re-lints the document opened through the link."""
    project = make_project(tmp_path / "real")
    (project / "pkg").mkdir()
    (project / "pkg" / "train.py").write_text(TRAIN)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "pkg").symlink_to(project / "pkg", target_is_directory=True)
    ws = Workspace(use_cache=False)
    train = str(tmp_path / "elsewhere" / "pkg" / "train.py")
    ws.open(train, TRAIN, 1)
    assert ("TSL301", 12) in _codes(ws.documents[train].outcome)
    _touch_settings(project / "pyproject.toml", '[project]\nname = "demo"\n\n[tool.torchsync-lint]\nignore = ["TSL301"]\n')
    outcomes = {o.path: o for o in ws.files_changed()}
    assert train in outcomes and not any(code == "TSL301" for code, _ in _codes(outcomes[train]))


def test_only_the_sessions_of_open_documents_are_kept_and_refreshed(tmp_path, monkeypatch):
    from torchsync_lint.project.session import Session

    a, b = make_project(tmp_path / "a"), make_project(tmp_path / "b")
    ws = Workspace(use_cache=False)
    ws.open(str(a / "train.py"), TRAIN, 1)
    ws.open(str(b / "train.py"), TRAIN, 1)
    ws.close(str(b / "train.py"))
    refreshed = []
    real = Session.refresh
    monkeypatch.setattr(Session, "refresh", lambda self: refreshed.append(self.root) or real(self))
    (b / "other.py").write_text("x = 1\n")
    assert ws.files_changed() == []
    assert refreshed == [a]
    ws.close(str(a / "train.py"))
    refreshed.clear()
    assert ws.files_changed() == [] and refreshed == []


def test_the_same_text_is_linted_once(project, monkeypatch):
    """A hover in the debounce lints the text; the debounced lint and a save of that text then
    give the same outcome without linting it again; new settings do lint it again."""
    ws = Workspace(use_cache=False)
    runs = []
    real = Workspace._run
    monkeypatch.setattr(Workspace, "_run", lambda self, doc, config: runs.append(doc.text) or real(self, doc, config))
    train = str(project / "train.py")
    ws.update(train, TRAIN, 1)
    doc, outcomes = ws.current(train)
    assert len(runs) == 1 and ("TSL301", 12) in _codes(doc.outcome)
    for _ in range(2):  # the debounced lint, then a save
        ws.update(train, TRAIN, 1)
        [outcome], others = ws.lint_document(train)
        assert outcome is doc.outcome and others == [] and len(runs) == 1
    _touch_settings(project / "pyproject.toml", '[project]\nname = "demo"\n\n[tool.torchsync-lint]\nignore = ["TSL301"]\n')
    [outcome], _ = ws.lint_document(train)
    assert len(runs) == 2 and not any(code == "TSL301" for code, _ in _codes(outcome))
