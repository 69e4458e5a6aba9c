"""The Session's public API for in-memory sources (an editor's unsaved buffer, stdin, a fix
round): what the language server builds on (project/session.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchsync_lint.config import Config
from torchsync_lint.project.session import Session
from torchsync_lint.project.sessions import Sessions

DATA = Path(__file__).parent / "data" / "entry_points"


def project(tmp_path: Path, case: str = "helper-item") -> Path:
    root = tmp_path / "p"
    shutil.copytree(DATA / case / "project", root)
    (root / "other.py").write_text("import torch\n\nx = torch.zeros(3)\n")  # connected to nothing
    return root


def codes(result) -> list[tuple]:
    return sorted((f.line, f.column, f.code) for f in result.findings)


def test_an_unsaved_buffer_is_linted_as_the_project_would_be(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    assert codes(session.lint(str(root / "utils.py"))) == [(5, 12, "TSL101")]
    train = root / "train.py"
    unsaved = train.read_text().replace("to_scalar(loss)", "loss")  # the per-step call removed, not saved
    changed = session.set_source(str(train), unsaved)
    assert changed == {"train.py", "utils.py"}  # its summary changed: the connected modules
    assert codes(session.lint(str(root / "utils.py"))) == []
    assert train.read_text() != unsaved  # nothing written
    assert session.clear_source(str(train)) == {"train.py", "utils.py"}
    assert codes(session.lint(str(root / "utils.py"))) == [(5, 12, "TSL101")]


def test_an_edit_that_changes_no_summary_relints_only_that_file(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    session.lint(str(root / "utils.py"))
    utils = root / "utils.py"
    assert session.set_source(str(utils), utils.read_text() + "# a comment at the end\n") == {"utils.py"}
    assert session.set_source(str(root / "other.py"), "import torch\n\nx = torch.ones(3)\n") == {"other.py"}


def test_dependents_are_the_connected_modules_of_the_component(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    assert session.dependents(str(root / "utils.py")) == {"train.py", "utils.py"}
    assert session.dependents(str(root / "other.py")) == {"other.py"}


def test_lint_with_text_in_hand_and_a_new_unsaved_file(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    new = root / "driver.py"  # not on disk yet: an editor's new buffer
    text = (root / "train.py").read_text()
    result = session.lint(str(new), text=text)
    assert codes(result) == codes(session.lint(str(root / "train.py")))
    assert "driver.py" in session.modules() and not new.exists()


def test_editing_lints_versions_and_restores_the_source(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    utils, train = str(root / "utils.py"), str(root / "train.py")
    with session.editing(train) as lint:
        assert {f.code for f in lint((root / "train.py").read_text())} == {"TSL302"}
        lint((root / "train.py").read_text().replace("to_scalar(loss)", "loss"))
        assert codes(session.lint(utils)) == []  # the project sees the version being edited
    assert codes(session.lint(utils)) == [(5, 12, "TSL101")]


def test_refresh_reports_what_changed_on_disk(tmp_path):
    root = project(tmp_path)
    session = Session(root, Config(), use_cache=False)
    session.lint(str(root / "utils.py"))
    assert session.refresh() == set()
    (root / "other.py").write_text("import torch\n\ny = torch.zeros(3)\n")
    assert session.refresh() == {"other.py"}
    train = root / "train.py"
    train.write_text(train.read_text().replace("to_scalar(loss)", "loss"))
    assert session.refresh() == {"train.py", "utils.py"}
    assert codes(session.lint(str(root / "utils.py"))) == []


def test_sessions_group_a_run_by_project_root(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        root.mkdir()
        (root / "pyproject.toml").write_text("")
        (root / "m.py").write_text("import torch\n")
    loose = tmp_path / "loose.py"
    loose.write_text("import torch\n")
    run = Sessions.for_files([str(a / "m.py"), str(b / "m.py"), str(loose)], Config())
    assert sorted(run.by_root) == [a, b]
    assert run.session_for(str(a / "m.py")).root == a and run.session_for(str(loose)) is run.loose
    assert not run.loose.marked and run.loose.modules() == ["loose.py"]


@pytest.mark.parametrize(("package", "own_project"), [(True, False), (False, True)])
def test_a_package_building_an_extension_in_place_belongs_to_the_project_around_it(tmp_path, package, own_project):
    """vits' `monotonic_align/` holds `__init__.py` and a `setup.py` that builds its Cython core
    in place: it is the package `import monotonic_align` reads, part of the project. A
    directory with a `setup.py` and no `__init__.py` is a sub-project of a monorepo."""
    from torchsync_lint.project.layout import clear_marker_memo, project_root

    (tmp_path / "pyproject.toml").write_text("")
    ext = tmp_path / "monotonic_align"
    ext.mkdir()
    (ext / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    if package:
        (ext / "__init__.py").write_text("")
    (ext / "core.py").write_text("import torch\n")
    clear_marker_memo()
    assert project_root(str(ext / "core.py")) == ((ext if own_project else tmp_path), True)


def test_the_import_graph_parses_import_statements_not_whole_modules(tmp_path, monkeypatch):
    # The graph parses import statements, never a whole module; Python's ast of a whole module
    # is parsed where positions need it and for a scope's outlines, at most once per module
    # each, and the findings stay the same.
    import torchsync_lint.analysis.positions as positions
    import torchsync_lint.project.graph as graph
    import torchsync_lint.project.outline as outline

    root = project(tmp_path)
    files = [str(root / name) for name in ("train.py", "utils.py", "other.py")]
    expected = [codes(Session(root, Config(), use_cache=False, files=files).lint(f)) for f in files]
    by_graph: list[str] = []
    by_positions: list[str] = []
    by_outline: list[str] = []  # (the scopes' outlines: project/outline.py)
    for module, parsed in ((graph, by_graph), (positions, by_positions), (outline, by_outline)):
        real = module.parse_tree
        monkeypatch.setattr(module, "parse_tree", lambda source, *a, real=real, parsed=parsed, **k: parsed.append(source) or real(source, *a, **k))
    session = Session(root, Config(), use_cache=False, files=files)
    assert [codes(session.lint(f)) for f in files] == expected
    texts = {(root / name).read_text() for name in ("train.py", "utils.py", "other.py")}
    assert not texts & set(by_graph)  # the graph parses statements, never a whole module (a lint reads scopes: no graph)
    assert all(t.lstrip().startswith(("import", "from", "if 1:")) for t in by_graph)
    assert len(by_positions) == len(set(by_positions))  # once each at most
    assert by_outline and len(by_outline) == len(set(by_outline))  # a module's outline: once at most
