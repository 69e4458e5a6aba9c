"""The language server's pygls-free parts: what it lints and re-lints (workspace.py), code
actions as text (actions.py), notebook cells (notebooks.py) and positions (text.py).
tests/test_server.py drives the whole server over stdio with a real LSP client."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests._server_project import HELPERS_CLEAN, OTHER, TRAIN, line_of, make_project
from torchsync_lint.api import config_for, lint_paths
from torchsync_lint.server import actions, text
from torchsync_lint.server.notebooks import CellDocument, NotebookBuffer
from torchsync_lint.server.workspace import Workspace


def _codes(outcome) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in outcome.findings)


@pytest.fixture()
def project(tmp_path):
    return make_project(tmp_path / "demo")


def _open_all(ws: Workspace, root) -> dict[str, str]:
    paths = {name: str(root / name) for name in ("train.py", "helpers.py", "other.py")}
    for name, path in paths.items():
        ws.open(path, (root / name).read_text(), 1)
    return paths


def test_findings_are_those_of_check(project):
    """Same project view, same settings: the open files get `check`'s findings."""
    ws = Workspace(use_cache=False)
    paths = _open_all(ws, project)
    cli = {r.path: sorted((f.code, f.line, f.column, f.message) for f in r.findings) for r in lint_paths([str(project)], config_for([str(project)]), use_cache=False)}
    for path in paths.values():
        ours = sorted((f.code, f.line, f.column, f.message) for f in ws.documents[path].outcome.findings)
        assert ours == cli[path]
    assert ("TSL101", 2) in _codes(ws.documents[paths["helpers.py"]].outcome)  # needs train.py


def test_editing_a_helper_relints_its_dependents_only(project):
    ws = Workspace(use_cache=False)
    paths = _open_all(ws, project)
    ws.update(paths["helpers.py"], HELPERS_CLEAN, 2)
    outcomes = ws.lint(paths["helpers.py"])
    assert {o.path for o in outcomes} == {paths["helpers.py"], paths["train.py"]}  # not other.py
    assert _codes(outcomes[0]) == []

    # A change that leaves what helpers.py exports alone re-lints nothing else.
    ws.update(paths["helpers.py"], HELPERS_CLEAN + "\n# a comment\n", 3)
    assert [o.path for o in ws.lint(paths["helpers.py"])] == [paths["helpers.py"]]


def test_an_unsaved_edit_of_the_caller_changes_the_helpers_findings(project):
    """train.py's buffer stops calling the helper every step: helpers.py's TSL101 (which
    exists only because of that call) goes, although nothing was saved."""
    ws = Workspace(use_cache=False)
    paths = _open_all(ws, project)
    edited = TRAIN.replace("        log_loss(loss)\n", "    log_loss(loss)\n")
    ws.update(paths["train.py"], edited, 2)
    outcomes = {o.path: o for o in ws.lint(paths["train.py"])}
    assert set(outcomes) == {paths["train.py"], paths["helpers.py"]}
    assert _codes(outcomes[paths["helpers.py"]]) == []
    assert (project / "train.py").read_text() == TRAIN  # nothing written

    ws.close(paths["train.py"])  # the file on disk counts again
    assert ("TSL101", 2) in _codes(ws.documents[paths["helpers.py"]].outcome)


def test_a_syntax_error_gives_no_findings_and_recovers(project):
    ws = Workspace(use_cache=False)
    path = str(project / "train.py")
    ws.open(path, TRAIN, 1)
    ws.update(path, TRAIN.replace("for step, (x, y) in", "for step, (x, y in"), 2)
    [broken] = ws.lint(path)
    assert broken.findings == [] and broken.syntax_error is not None and broken.syntax_error.code == "TSL900"
    ws.update(path, TRAIN, 3)
    [fixed] = ws.lint(path)
    assert fixed.syntax_error is None and ("TSL301", line_of(TRAIN, "x = x.to")) in _codes(fixed)


@pytest.mark.parametrize("pyproject, fragment", [
    ("[tool.torchsync-lint]\nselect = [\n", "cannot parse"),
    ('[tool.torchsync-lint]\nunsafe-fixes = "yes"\n', "unsafe-fixes: expected a boolean"),
    ('[tool.torchsync-lint]\nselect = ["TSL999"]\n', "unknown rule selector"),
])
def test_a_malformed_pyproject_is_an_outcome_not_an_exception(tmp_path, pyproject, fragment):
    root = make_project(tmp_path / "bad", pyproject)
    ws = Workspace(use_cache=False)
    [outcome] = ws.open(str(root / "train.py"), TRAIN, 1)
    assert fragment in outcome.config_error and outcome.findings == []
    if "TSL999" not in pyproject:
        assert outcome.config_file == str(root / "pyproject.toml")
    # Fixed on disk: the next lint reads it again.
    (root / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL303"]\n')
    [again] = ws.lint(str(root / "train.py"))
    assert again.config_error is None and "TSL301" in {f.code for f in again.findings} and "TSL303" not in {f.code for f in again.findings}


def test_settings_per_file_and_excludes(tmp_path):
    root = make_project(tmp_path / "p", '[tool.torchsync-lint]\nper-file-ignores = {"train.py" = ["TSL301"]}\nextend-exclude = ["skipped"]\n')
    (root / "skipped").mkdir()
    (root / "skipped" / "t.py").write_text(TRAIN)
    ws = Workspace(use_cache=False)
    [train] = ws.open(str(root / "train.py"), TRAIN, 1)
    assert "TSL301" not in {f.code for f in train.findings} and "TSL302" in {f.code for f in train.findings}
    [skipped] = ws.open(str(root / "skipped" / "t.py"), TRAIN, 1)
    assert skipped.findings == [] and skipped.syntax_error is None and skipped.config_error is None  # the same text, excluded


def test_buffers_never_reach_the_disk_cache(project):
    ws = Workspace()
    path = str(project / "helpers.py")
    ws.open(str(project / "train.py"), TRAIN, 1)
    before = sorted(p.name for p in (project / ".torchsync_cache").rglob("*.json"))
    for n in range(3):
        ws.open(path, HELPERS_CLEAN + f"# edit {n}\n", n)
    assert sorted(p.name for p in (project / ".torchsync_cache").rglob("*.json")) == before


def test_actions_fix_unsafe_fix_noqa_and_fix_all(project):
    ws = Workspace(use_cache=False)
    path = str(project / "train.py")
    [outcome] = ws.open(path, TRAIN, 1)
    by_code = {f.code: f for f in outcome.findings}
    offered = actions.offered([by_code["TSL301"], by_code["TSL303"]], outcome.findings)
    kinds = [(a.kind, a.finding.code if a.finding else None) for a in offered]
    assert kinds == [("fix", "TSL301"), ("noqa", "TSL301"), ("unsafe-fix", "TSL303"), ("noqa", "TSL303"), ("fix-all", None)]
    assert "unsafe" in offered[2].title
    for action in offered:
        new = ws.perform(path, action)[path]
        ast.parse(new)
        left = Workspace(use_cache=False).open(path, new, 1)[0].findings  # the same file with that text
        if action.finding is not None:
            assert (action.finding.code, action.finding.line) not in {(f.code, f.line) for f in left}
        else:
            assert not any(f.fix is not None and f.fix.applicability.value == "safe" for f in left)
    assert (project / "train.py").read_text() == TRAIN  # actions return text; the editor applies it


def test_noqa_is_not_offered_where_it_would_break_the_code():
    from torchsync_lint.types import Finding

    source = 'x = """\nabc\n"""\n'
    finding = Finding("t.py", 1, 1, 3, 4, "TSL101", "host-read-in-loop", "m")
    new = actions.perform(actions.Action("noqa", "", finding), source, "t.py", [finding], lambda t: [])
    assert new == 'x = """\nabc\n"""  # noqa: TSL101\n'  # after the string, on its last line


def test_hover_is_what_explain_prints(project, capsys):
    from torchsync_lint.cli import main

    ws = Workspace(use_cache=False)
    [outcome] = ws.open(str(project / "train.py"), TRAIN, 1)
    finding = next(f for f in outcome.findings if f.code == "TSL301")
    markdown = actions.hover(actions.covering(outcome.findings, (finding.line, finding.column + 2), (finding.line, finding.column + 2)))
    main(["explain", "TSL301"])
    explained = capsys.readouterr().out
    assert finding.message in markdown
    body = explained.split("\n", 2)[2]  # after the `# TSL301 name` heading
    assert body.strip().replace("\n#", "\n##") in markdown
    assert actions.hover(actions.covering(outcome.findings, (1, 1), (1, 1))) is None


def test_notebook_cells_are_linted_as_the_notebook_file_and_fixed_per_cell(tmp_path):
    cells = [
        CellDocument("cell:a", "# Title", code=False),
        CellDocument("cell:b", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\ndevice = 'cuda'\n", code=True),
        CellDocument("cell:c", "%matplotlib inline\nfor x in loader:\n    x = x.to(device)\n    loss = model(x)\n    loss.backward()", code=True),
        CellDocument("cell:d", "SELECT 1", code=True, language="sql"),
    ]
    nb = NotebookBuffer(cells)
    path = str(tmp_path / "nb.ipynb")
    ws = Workspace(use_cache=False)
    [outcome] = ws.open(path, "", 1, notebook=nb)
    (tmp_path / "nb.ipynb").write_text(nb.json())  # `check` on the same cells, saved
    cli = {(f.code, f.cell, f.line, f.column) for r in lint_paths([str(tmp_path / "nb.ipynb")], config_for([str(tmp_path)]), use_cache=False) for f in r.findings}
    assert {(f.code, f.cell, f.line, f.column) for f in outcome.findings} == cli
    copy = next(f for f in outcome.findings if f.code == "TSL301")
    assert (nb.uris[copy.cell], copy.line, copy.column) == ("cell:c", 3, 9)
    edited = ws.perform(path, actions.Action("fix", "", copy))
    assert list(edited) == ["cell:c"]
    assert edited["cell:c"].startswith("%matplotlib inline\n") and "x.to(device, non_blocking=True)" in edited["cell:c"]
    assert not edited["cell:c"].endswith("\n")  # the cell had no final newline


@pytest.mark.parametrize("old, new", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\r\nb\r\n", "a\r\nb\r\nc\r\n"),
    ("x = 1\r\n", "x = 1  # noqa\r\n"),
    ("ab", "abc"),
    ("abc", ""),
    ("😀 = 1\ny", "😀 = 2\ny"),
    ("a\rb", "a\rc"),
])
def test_replacement_round_trips(old, new):
    from torchsync_lint.fixing.edits import LineIndex

    start, end, content = text.replacement(old, new)
    index = LineIndex(old)
    assert old[: index.offset(*start)] + content + old[index.offset(*end) :] == new


def test_client_positions_count_utf16_units():
    rows = text.lines("s = '😀'; x.item()\n")
    assert text.to_client(rows, 1, 11, "utf-16") == text.Position(0, 11)  # 10 code points, 11 units
    assert text.to_client(rows, 1, 11, "utf-32") == text.Position(0, 10)
    assert text.from_client(rows, text.Position(0, 11), "utf-16") == (1, 11)
    assert text.lines("a\x0cb\nc") == ["a\x0cb\n", "c"]  # a form feed is no line break


def test_the_server_package_imports_neither_pygls_nor_torch_for_linting(project):
    code = (
        "import sys\nfrom torchsync_lint.server.workspace import Workspace\n"
        f"ws = Workspace(use_cache=False)\nout = ws.open({str(project / 'train.py')!r}, open({str(project / 'train.py')!r}).read())\n"
        "assert out[0].findings, out\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pygls', 'lsprotocol'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_other_modules_are_left_alone(project):
    ws = Workspace(use_cache=False)
    paths = _open_all(ws, project)
    ws.update(paths["other.py"], OTHER.replace("zeros(3)", "zeros(4)"), 2)
    assert [o.path for o in ws.lint(paths["other.py"])] == [paths["other.py"]]


def test_a_buffer_never_stands_for_its_file_in_the_disk_cache(project):
    """The import lists and graph the cache keys by a file's size and mtime are the file's,
    not an unsaved buffer's: `check` after the editor gets what it would get without it."""
    ws = Workspace()
    unsaved = TRAIN.replace("from helpers import log_loss\n", "").replace("        log_loss(loss)\n", "")
    ws.open(str(project / "train.py"), unsaved, 1)
    ws.close(str(project / "train.py"))
    config = config_for([str(project)])
    cached = {r.path: sorted((f.code, f.line) for f in r.findings) for r in lint_paths([str(project)], config)}
    fresh = {r.path: sorted((f.code, f.line) for f in r.findings) for r in lint_paths([str(project)], config, use_cache=False)}
    assert cached == fresh and ("TSL101", 2) in fresh[str(project / "helpers.py")]


def test_files_changed_on_disk_relint_the_open_documents_they_affect(project):
    ws = Workspace(use_cache=False)
    helpers = str(project / "helpers.py")
    ws.open(helpers, (project / "helpers.py").read_text(), 1)
    assert ("TSL101", 2) in _codes(ws.documents[helpers].outcome)
    (project / "train.py").write_text(TRAIN.replace("        log_loss(loss)\n", "    log_loss(loss)\n"))  # e.g. git checkout
    assert [o.path for o in ws.files_changed()] == [helpers]
    assert _codes(ws.documents[helpers].outcome) == []
    assert ws.files_changed() == []  # nothing changed since


def test_a_half_typed_buffer_leaves_the_other_files_alone(project):
    """While train.py does not parse, helpers.py keeps the finding train.py's last parsing
    version gives it (no flicker), and is not linted again when train.py parses once more
    with nothing changed."""
    ws = Workspace(use_cache=False)
    paths = _open_all(ws, project)
    broken = TRAIN.replace("        log_loss(loss)\n", "        log_loss(loss\n")
    ws.update(paths["train.py"], broken, 2)
    assert [o.path for o in ws.lint(paths["train.py"])] == [paths["train.py"]]
    ws.update(paths["helpers.py"], (project / "helpers.py").read_text() + "# typing elsewhere\n", 2)
    assert ("TSL101", 2) in _codes(ws.lint(paths["helpers.py"])[0])
    ws.update(paths["train.py"], TRAIN, 3)
    assert [o.path for o in ws.lint(paths["train.py"])] == [paths["train.py"]]


def test_an_edit_is_parsed_once_however_long_the_session_lives(project, monkeypatch):
    """The summary's parse is the lint's too (the buffer is a file the session lints), and
    what the Session keeps for that stays bounded: with room for three such files only,
    the tenth edit is still parsed once."""
    import libcst

    from torchsync_lint.project import session as session_module

    monkeypatch.setattr(session_module, "_KEEP_ANALYSES_BYTES", 3 * len(TRAIN) + 100)
    ws = Workspace(use_cache=False)
    path = str(project / "train.py")
    ws.open(path, TRAIN, 1)
    parses = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda *a, **k: parses.append(1) or real(*a, **k))
    for n in range(10):
        parses.clear()
        ws.update(path, TRAIN + f"STEP_{n} = {n}\n", n + 2)
        ws.lint_document(path)
        assert len(parses) == 1, n


def test_a_module_that_exists_only_in_an_unsaved_buffer_is_part_of_the_project(project):
    ws = Workspace(use_cache=False)
    new = str(project / "metrics_util.py")  # a new file, never saved
    ws.open(new, "def read(loss):\n    return loss.item()\n", 1)
    train = TRAIN.replace("from helpers import log_loss\n", "from helpers import log_loss\nfrom metrics_util import read\n")
    train = train.replace("        log_loss(loss)\n", "        log_loss(loss)\n        read(loss)\n")
    outcomes = {o.path: o for o in ws.open(str(project / "train.py"), train, 1)}
    assert ("TSL101", 2) in _codes(outcomes[new])  # linted again: train.py now calls it every step
    assert not (project / "metrics_util.py").exists()
