"""`torchsync-lint server` end to end: a real LSP client (pytest-lsp, on pygls) spawns
`python -m torchsync_lint server` and talks to it over stdio, with the capabilities that VS
Code, Neovim and Emacs declare. Nothing here calls a handler directly."""

from __future__ import annotations

import ast
import asyncio
import sys
import time
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pygls.protocol import default_converter  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from tests._server_project import HELPERS_CLEAN, OTHER, TRAIN, line_of, make_project  # noqa: E402

SERVER = [sys.executable, "-m", "torchsync_lint", "server", "--debounce-ms", "50"]


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics in order (to count them)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []

    def publish(c: LanguageClient, params: lsp.PublishDiagnosticsParams) -> None:
        c.published.append(params)
        c.diagnostics[params.uri] = params.diagnostics

    def register_capability(c: LanguageClient, params: lsp.RegistrationParams) -> None:
        c.registrations += [r.method for r in params.registrations]  # as editors do: accept
        c.registered += params.registrations

    client.registrations, client.registered = [], []
    register_lsp_features(client, {
        **DEFAULT_CLIENT_FEATURES,
        lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
        lsp.CLIENT_REGISTER_CAPABILITY: register_capability,
    })
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=_recording_client)


@pytest.fixture()
def project(tmp_path):
    return make_project(tmp_path / "demo project")  # a space: URIs carry it as %20


@pytest_lsp.fixture(config=CONFIG, params=["visual-studio-code", "neovim", "emacs"])
async def client(lsp_client: LanguageClient, project, request):
    lsp_client.initialized_with = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities(request.param),
        root_uri=from_fs_path(str(project)),
        workspace_folders=[lsp.WorkspaceFolder(from_fs_path(str(project)), "demo")],
    ))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def vscode(lsp_client: LanguageClient, project):
    """One client (VS Code's capabilities) for the tests that do not depend on the client."""
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(project))))
    yield
    await lsp_client.shutdown_session()


# -- helpers ------------------------------------------------------------------------------------

def uri(path: Path) -> str:
    return from_fs_path(str(path))


async def until(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def codes(client: LanguageClient, target: str) -> set[tuple[str, int]]:
    """(code, 1-based line) of the diagnostics the client holds for ``target``."""
    return {(d.code, d.range.start.line + 1) for d in client.diagnostics.get(target, [])}


def published(client: LanguageClient, target: str) -> int:
    return sum(1 for p in client.published if p.uri == target)


def last_version(client: LanguageClient, target: str) -> int | None:
    versions = [p.version for p in client.published if p.uri == target]
    return versions[-1] if versions else None


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    target = uri(path)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(target, "python", version, path.read_text() if text is None else text)))
    return target


def replace_all(client: LanguageClient, target: str, text: str, version: int) -> None:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(version, target), [lsp.TextDocumentContentChangeWholeDocument(text)]))


async def settle(client: LanguageClient, seconds: float = 0.6) -> None:
    """Give the server time to publish anything it still would (debounce + a lint)."""
    await asyncio.sleep(seconds)


def apply_edits(text: str, edits) -> str:
    """The client's side of a TextEdit list (ASCII texts: characters are code points)."""
    rows = text.splitlines(keepends=True)

    def offset(pos: lsp.Position) -> int:
        return sum(len(r) for r in rows[: pos.line]) + pos.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


# -- documents ----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_open_change_save(client: LanguageClient, project):
    train = open_doc(client, project / "train.py")
    await until(lambda: ("TSL301", 12) in codes(client, train), what="TSL301 on open")
    copy = next(d for d in client.diagnostics[train] if d.code == "TSL301")
    assert copy.source == "torchsync-lint" and copy.severity == lsp.DiagnosticSeverity.Warning
    assert copy.code_description.href.endswith("docs/rules.md#tsl301")
    assert (copy.range.start.line, copy.range.start.character, copy.range.end.character) == (11, 12, 24)  # `x.to(device)`
    assert "non_blocking=True" in copy.message

    helpers = open_doc(client, project / "helpers.py")
    await until(lambda: ("TSL101", 2) in codes(client, helpers), what="the helper's cross-module TSL101")
    item = next(d for d in client.diagnostics[helpers] if d.code == "TSL101")
    assert "called every step from train.py:18" in item.message
    [related] = item.related_information
    assert related.location.uri == train and related.location.range.start.line == 17

    # Typing: a gated host read appears after the debounce, with "gated" in its message, at
    # a column counted in the position encoding the client and the server agreed on.
    typed = '        if step % 100 == 0:\n            print("é😀", loss.item())\n'
    edited = TRAIN + typed
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(2, train),
        [lsp.TextDocumentContentChangePartial(lsp.Range(lsp.Position(18, 0), lsp.Position(18, 0)), typed)]))
    await until(lambda: ("TSL101", 20) in codes(client, train), what="the typed TSL101")
    gated = next(d for d in client.diagnostics[train] if d.code == "TSL101")
    assert "gated by `if step % 100 == 0:`" in gated.message
    encoding = client.initialized_with.capabilities.position_encoding or "utf-16"
    before = typed.splitlines()[1].split("loss.item")[0]
    units = {"utf-8": len(before.encode()), "utf-16": len(before.encode("utf-16-le")) // 2, "utf-32": len(before)}
    assert gated.range.start.character == units[encoding], encoding
    assert last_version(client, train) == 2

    before = published(client, train)
    (project / "train.py").write_text(edited)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(train)))
    await until(lambda: published(client, train) > before, what="diagnostics on save")
    assert ("TSL101", 20) in codes(client, train)


@pytest.mark.asyncio
async def test_editing_a_helper_relints_its_open_dependents_only(vscode: LanguageClient, project):
    client = vscode
    train, helpers, other = (open_doc(client, project / n) for n in ("train.py", "helpers.py", "other.py"))
    await until(lambda: all(published(client, u) for u in (train, helpers, other)), what="first diagnostics")
    await settle(client)
    counts = {u: published(client, u) for u in (train, helpers, other)}

    # train.py (not saved) stops calling the helper every step: helpers.py's finding goes.
    replace_all(client, train, TRAIN.replace("        log_loss(loss)\n", "    log_loss(loss)\n"), 2)
    await until(lambda: ("TSL101", 2) not in codes(client, helpers), what="helpers.py re-linted")
    await settle(client)
    assert published(client, other) == counts[other]  # connected to neither

    # The call comes back; then the helper itself stops syncing: train.py is re-linted, other.py not.
    replace_all(client, train, TRAIN, 3)
    await until(lambda: ("TSL101", 2) in codes(client, helpers), what="the helper's finding back")
    await settle(client)
    counts = {u: published(client, u) for u in (train, helpers, other)}
    replace_all(client, helpers, HELPERS_CLEAN, 2)
    await until(lambda: published(client, helpers) > counts[helpers] and published(client, train) > counts[train], what="helper and dependent re-linted")
    assert codes(client, helpers) == set()
    await settle(client)
    assert published(client, other) == counts[other]

    # A comment in the helper changes nothing it exports: only the helper is linted again.
    counts = {u: published(client, u) for u in (train, helpers, other)}
    replace_all(client, helpers, HELPERS_CLEAN + "# a note\n", 3)
    await until(lambda: published(client, helpers) > counts[helpers], what="the helper re-linted")
    await settle(client)
    assert published(client, train) == counts[train] and published(client, other) == counts[other]


@pytest.mark.asyncio
async def test_a_syntax_error_keeps_the_last_findings_and_recovers(vscode: LanguageClient, project):
    """While the buffer does not parse, the findings of its last text that parsed stay (as
    Pylance and ruff keep theirs), with one TSL900 where the parser stopped."""
    client = vscode
    train = open_doc(client, project / "train.py")
    await until(lambda: ("TSL301", 12) in codes(client, train), what="findings")
    good = list(client.diagnostics[train])
    replace_all(client, train, TRAIN.replace("for step, (x, y) in", "for step, (x, y in"), 2)
    await until(lambda: last_version(client, train) == 2, what="a publish for the broken text")
    *kept, syntax = client.diagnostics[train]
    assert kept == good
    assert syntax.code == "TSL900" and syntax.severity == lsp.DiagnosticSeverity.Error and syntax.range.start.line == 10
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(train), lsp.Position(11, 14)))
    assert hover is None  # alive, and nothing to explain
    replace_all(client, train, TRAIN, 3)
    await until(lambda: ("TSL301", 12) in codes(client, train), what="findings after the fix")


# -- settings -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_a_malformed_pyproject_is_a_message_then_recovers(vscode: LanguageClient, project):
    client = vscode
    pyproject = project / "pyproject.toml"
    pyproject.write_text("[tool.torchsync-lint]\nselect = [\n")
    train = open_doc(client, project / "train.py")
    await until(lambda: client.messages, what="window/showMessage")
    [message] = client.messages
    assert message.type == lsp.MessageType.Error and "pyproject.toml: cannot parse" in message.message
    await until(lambda: client.diagnostics.get(uri(pyproject)), what="a diagnostic on pyproject.toml")
    [problem] = client.diagnostics[uri(pyproject)]
    assert problem.severity == lsp.DiagnosticSeverity.Error and problem.range.start.line >= 1
    assert list(client.diagnostics.get(train, [])) == []  # nothing linted with settings it cannot read

    pyproject.write_text('[tool.torchsync-lint]\nignore = ["TSL303"]\n')
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams([lsp.FileEvent(uri(pyproject), lsp.FileChangeType.Changed)]))
    await until(lambda: ("TSL301", 12) in codes(client, train), what="findings with the repaired settings")
    assert not any(code == "TSL303" for code, _ in codes(client, train))  # its `ignore` applies
    assert list(client.diagnostics[uri(pyproject)]) == []
    assert len(client.messages) == 1


@pytest_lsp.fixture(config=CONFIG)
async def two_folders(lsp_client: LanguageClient, tmp_path):
    a = make_project(tmp_path / "a")
    b = make_project(tmp_path / "b", '[tool.torchsync-lint]\nignore = ["TSL301"]\n')
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim"),
        workspace_folders=[lsp.WorkspaceFolder(uri(a), "a"), lsp.WorkspaceFolder(uri(b), "b")]))
    lsp_client.folders = (a, b)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_each_workspace_folder_gets_its_own_settings(two_folders: LanguageClient):
    client = two_folders
    a, b = client.folders
    ua, ub = open_doc(client, a / "train.py"), open_doc(client, b / "train.py")
    await until(lambda: published(client, ua) and published(client, ub), what="both folders")
    assert ("TSL301", 12) in codes(client, ua)
    assert not any(code == "TSL301" for code, _ in codes(client, ub)) and ("TSL302", 10) in codes(client, ub)


# -- code actions and hover ---------------------------------------------------------------------

async def _actions(client: LanguageClient, target: str, line: int, only=None) -> list[lsp.CodeAction]:
    diagnostics = [d for d in client.diagnostics[target] if d.range.start.line == line - 1]
    rng = lsp.Range(lsp.Position(line - 1, 0), lsp.Position(line - 1, 200))
    found = await client.text_document_code_action_async(lsp.CodeActionParams(lsp.TextDocumentIdentifier(target), rng, lsp.CodeActionContext(diagnostics, only=only)))
    return list(found or [])


async def _edits_of(client: LanguageClient, action: lsp.CodeAction, target: str) -> list[lsp.TextEdit]:
    if action.edit is None:  # listed without its edit: the client resolves the one it applies
        action = await client.code_action_resolve_async(action)
    assert action.edit is not None, action.title
    if action.edit.document_changes is not None:  # the client takes versioned edits
        [change] = action.edit.document_changes
        assert change.text_document.uri == target and change.text_document.version is not None
        return list(change.edits)
    assert set(action.edit.changes) == {target}
    return list(action.edit.changes[target])


@pytest.mark.asyncio
async def test_every_code_action_applies_parses_and_removes_its_finding(client: LanguageClient, project):
    target = open_doc(client, project / "train.py")
    loader, copy = line_of(TRAIN, "DataLoader(dataset"), line_of(TRAIN, "x = x.to")
    await until(lambda: ("TSL301", copy) in codes(client, target), what="findings")
    version = 1
    cases = [
        (copy, lambda a: a.title.startswith("Fix TSL301") and a.kind == "quickfix", "TSL301", copy),
        (loader, lambda a: a.title.startswith("Fix TSL303") and "unsafe" in a.title, "TSL303", loader),
        (loader, lambda a: a.title.startswith("Add `# noqa: TSL302`"), "TSL302", loader),
    ]
    for line, pick, code, where in cases:
        offered = await _actions(client, target, line)
        action = next(a for a in offered if pick(a))
        assert bool(action.is_preferred) == (action.title.startswith("Fix") and "unsafe" not in action.title)
        new = apply_edits(TRAIN, await _edits_of(client, action, target))
        ast.parse(new)
        version += 1
        replace_all(client, target, new, version)
        await until(lambda: last_version(client, target) == version, what=f"diagnostics after {action.title}")
        assert (code, where) not in codes(client, target), action.title
        if code == "TSL302":
            assert "# noqa: TSL302" in new.splitlines()[loader - 1]
        version += 1
        replace_all(client, target, TRAIN, version)
        await until(lambda: (code, where) in codes(client, target), what="the original findings back")

    [fix_all] = await _actions(client, target, 1, only=[lsp.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.torchsync-lint"
    new = apply_edits(TRAIN, await _edits_of(client, fix_all, target))
    ast.parse(new)
    assert "pin_memory=" in new and "x.to(device, non_blocking=True)" in new and "num_workers" not in new
    version += 1
    replace_all(client, target, new, version)
    await until(lambda: last_version(client, target) == version, what="diagnostics after fix all")
    assert {code for code, _ in codes(client, target)} == {"TSL303"}  # only the unsafe fix's finding is left


@pytest.mark.asyncio
async def test_hover_explains_the_rule(vscode: LanguageClient, project):
    import subprocess

    client = vscode
    target = open_doc(client, project / "train.py")
    await until(lambda: ("TSL301", 12) in codes(client, target), what="findings")
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(target), lsp.Position(11, 16)))
    assert hover.contents.kind == lsp.MarkupKind.Markdown
    explained = subprocess.run([sys.executable, "-m", "torchsync_lint", "explain", "TSL301"], capture_output=True, text=True, check=True).stdout
    assert "## What it does" not in explained.split("\n", 1)[0]
    for line in ("## TSL301 blocking-host-to-device-copy", "### What it does", "### Fix safety"):
        assert line in hover.contents.value
    assert explained.split("## What it does", 1)[1].split("\n## ", 1)[0].strip() in hover.contents.value
    assert await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(target), lsp.Position(0, 3))) is None


# -- notebooks ----------------------------------------------------------------------------------

CELLS = [
    (lsp.NotebookCellKind.Markup, "markdown", "# Training"),
    (lsp.NotebookCellKind.Code, "python", "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\nmodel = torch.nn.Linear(8, 4).to(device)\nloader = DataLoader(ds, batch_size=8)\n"),
    (lsp.NotebookCellKind.Code, "python", "%time\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum()\n    loss.backward()\n"),
]


@pytest.mark.asyncio
async def test_notebook_cells_get_diagnostics_actions_and_hover(vscode: LanguageClient, tmp_path):
    client = vscode
    notebook_uri = uri(tmp_path / "train.ipynb")
    cell_uris = [f"vscode-notebook-cell:{tmp_path / 'train.ipynb'}#cell{n}" for n in range(len(CELLS))]
    client.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(
        lsp.NotebookDocument(notebook_uri, "jupyter-notebook", 1, [lsp.NotebookCell(kind, u) for (kind, _, _), u in zip(CELLS, cell_uris)]),
        [lsp.TextDocumentItem(u, language, 1, text) for (_, language, text), u in zip(CELLS, cell_uris)]))
    await until(lambda: ("TSL301", 3) in codes(client, cell_uris[2]), what="TSL301 in the third cell")
    assert ("TSL302", 5) in codes(client, cell_uris[1])  # the loader, in its own cell

    diagnostics = [d for d in client.diagnostics[cell_uris[2]] if d.code == "TSL301"]
    rng = diagnostics[0].range
    found = await client.text_document_code_action_async(lsp.CodeActionParams(lsp.TextDocumentIdentifier(cell_uris[2]), rng, lsp.CodeActionContext(diagnostics)))
    action = next(a for a in found if a.title.startswith("Fix TSL301"))
    edits = await _edits_of(client, action, cell_uris[2])
    new_cell = apply_edits(CELLS[2][2], edits)
    assert new_cell.startswith("%time\n") and "x = x.to(device, non_blocking=True)" in new_cell
    ast.parse(new_cell.replace("%time", "pass"))

    client.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
        lsp.VersionedNotebookDocumentIdentifier(2, notebook_uri),
        lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(text_content=[
            lsp.NotebookDocumentCellContentChanges(lsp.VersionedTextDocumentIdentifier(2, cell_uris[2]), [lsp.TextDocumentContentChangeWholeDocument(new_cell)])]))))
    await until(lambda: ("TSL301", 3) not in codes(client, cell_uris[2]), what="the fixed cell re-linted")

    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(cell_uris[1]), lsp.Position(4, 12)))
    assert "TSL302" in hover.contents.value


# -- without pygls -------------------------------------------------------------------------------

def test_without_pygls_the_server_says_how_to_install_it(monkeypatch, capsys):
    from torchsync_lint.cli import main

    for name in ("pygls", "pygls.lsp", "pygls.lsp.server"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    assert main(["server"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'torchsync-lint[server]'" in err and "pygls" in err


def test_other_commands_never_import_pygls(tmp_path):
    import subprocess

    project = make_project(tmp_path / "p")
    code = (
        "import sys\nfrom torchsync_lint.cli import main\n"
        f"rc = main(['check', '--no-cache', {str(project)!r}])\n"
        "assert rc == 1, rc\nassert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, capture_output=True)
    assert (project / "other.py").read_text() == OTHER
