"""The language server's bookkeeping end to end (a real client over stdio, as in
test_server.py): the text it lints is the editor's text, the edits it returns apply to the text
the editor has, and what it lints (or leaves alone) is decided from consistent snapshots."""

from __future__ import annotations

import ast

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import LanguageClient, client_capabilities  # noqa: E402

from tests._server_project import TRAIN, line_of  # noqa: E402
from tests.test_server import CONFIG, apply_edits, codes, open_doc, project, published, until, uri, vscode  # noqa: E402,F401 (fixtures)


@pytest.mark.asyncio
async def test_incremental_edits_break_lines_as_lsp_does(vscode: LanguageClient, project):
    """A form feed in a comment is no line break for the editor (LSP breaks at \\n, \\r\\n and
    \\r only): an edit below it lands on the line the editor means."""
    client = vscode
    text = TRAIN.replace("import torch\n", "import torch  # a\x0cb\n", 1)
    (project / "train.py").write_text(text)
    train = open_doc(client, project / "train.py")
    await until(lambda: ("TSL301", 12) in codes(client, train), what="findings")
    typed = "        if step % 100 == 0:\n            print(loss.item())\n"
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(2, train),
        [lsp.TextDocumentContentChangePartial(lsp.Range(lsp.Position(18, 0), lsp.Position(18, 0)), typed)]))
    await until(lambda: any(code == "TSL101" for code, _ in codes(client, train)), what="the typed TSL101")
    assert ("TSL101", 20) in codes(client, train)  # split at the form feed, it lands on line 19


@pytest_lsp.fixture(config=CONFIG)
async def slow_vscode(lsp_client: LanguageClient, project):
    """VS Code's capabilities, and a debounce long enough that a request always comes before
    the lint of the change it follows."""
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=uri(project), initialization_options={"debounce": 5000}))
    yield
    await lsp_client.shutdown_session()


def _document_edits(edit: lsp.WorkspaceEdit, target: str) -> tuple[int | None, list[lsp.TextEdit]]:
    [change] = edit.document_changes
    assert change.text_document.uri == target
    return change.text_document.version, list(change.edits)


@pytest.mark.asyncio
async def test_a_resolved_edit_is_for_the_text_the_editor_has_and_says_its_version(slow_vscode: LanguageClient, project):
    client = slow_vscode
    train = open_doc(client, project / "train.py")
    await until(lambda: ("TSL301", 12) in codes(client, train), what="findings")
    [fix_all] = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(train), lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
        lsp.CodeActionContext([], only=[lsp.CodeActionKind.SourceFixAll])))
    assert fix_all.edit is None  # VS Code resolves the edit of the action it applies
    # The user renames the loop variable between the loader (fixed) and the copy (fixed); the
    # debounce has not run when the action is resolved.
    loop = line_of(TRAIN, "for step, (x, y)")
    edited = TRAIN.replace("for step, (x, y) in", "for i, (x, y) in")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(2, train),
        [lsp.TextDocumentContentChangePartial(lsp.Range(lsp.Position(loop - 1, 8), lsp.Position(loop - 1, 12)), "i")]))
    resolved = await client.code_action_resolve_async(fix_all)
    version, edits = _document_edits(resolved.edit, train)
    new = apply_edits(edited, edits)
    ast.parse(new)
    assert "for i, (x, y) in" in new and "x.to(device, non_blocking=True)" in new and "pin_memory=" in new
    assert version == 2


NOTEBOOK_CELLS = [
    (lsp.NotebookCellKind.Code, "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\nloader = DataLoader(ds, batch_size=8)\n"),
    (lsp.NotebookCellKind.Code, "for x, y in loader:\n    x = x.to(device)\n"),
    (lsp.NotebookCellKind.Code, "".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(1500))),  # a lint that takes a while
]


@pytest.mark.asyncio
async def test_a_hover_is_answered_from_one_linted_version_of_a_notebook(vscode: LanguageClient, tmp_path):
    """The hover is asked on the notebook's first version; the cell is deleted while it is
    answered (the worker already holds the second version): the answer is the first version's."""
    import asyncio

    client = vscode
    notebook_uri = uri(tmp_path / "nb.ipynb")
    cells = [f"vscode-notebook-cell:{tmp_path / 'nb.ipynb'}#cell{n}" for n in range(len(NOTEBOOK_CELLS))]
    client.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(
        lsp.NotebookDocument(notebook_uri, "jupyter-notebook", 1, [lsp.NotebookCell(kind, u) for (kind, _), u in zip(NOTEBOOK_CELLS, cells)]),
        [lsp.TextDocumentItem(u, "python", 1, text) for (_, text), u in zip(NOTEBOOK_CELLS, cells)]))
    hover = asyncio.ensure_future(client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(cells[1]), lsp.Position(1, 10))))
    await asyncio.sleep(0.1)  # the server has the hover (its lint is queued behind the open's)
    client.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
        lsp.VersionedNotebookDocumentIdentifier(2, notebook_uri),
        lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(
            structure=lsp.NotebookDocumentCellChangeStructure(lsp.NotebookCellArrayChange(1, 1), did_close=[lsp.TextDocumentIdentifier(cells[1])])))))
    answer = await hover
    assert answer is not None and "TSL301" in answer.contents.value


@pytest.mark.asyncio
async def test_an_untitled_notebook_is_not_linted_as_part_of_another_project(vscode: LanguageClient, project):
    """An untitled notebook has no path, hence no project and no settings: like an untitled
    .py file it is left alone (it used to become a module of the server's working directory)."""
    client = vscode
    notebook_uri = "untitled:Untitled-1.ipynb"
    cells = [f"vscode-notebook-cell:Untitled-1.ipynb#cell{n}" for n in range(2)]
    client.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(
        lsp.NotebookDocument(notebook_uri, "jupyter-notebook", 1, [lsp.NotebookCell(kind, u) for (kind, _), u in zip(NOTEBOOK_CELLS, cells)]),
        [lsp.TextDocumentItem(u, "python", 1, text) for (_, text), u in zip(NOTEBOOK_CELLS, cells)]))
    hover = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(cells[1]), lsp.Position(1, 10)))
    train = open_doc(client, project / "train.py")  # linted after the notebook would have been
    await until(lambda: ("TSL301", 12) in codes(client, train), what="train.py's findings")
    assert hover is None and not any(published(client, u) for u in cells)


@pytest.mark.asyncio
async def test_setup_cfg_is_a_settings_file_watched_and_re_read_on_save(vscode: LanguageClient, project):
    """setup.cfg marks a project root as pyproject.toml does: the server asks the client to
    watch it (with pyproject.toml and the ignore files), and saving it re-reads the project."""
    client = vscode
    await until(lambda: client.registered, what="the watched-files registration")
    [registration] = client.registered
    globs = {w["globPattern"] for w in registration.register_options["watchers"]}
    assert {"**/pyproject.toml", "**/setup.cfg", "**/.gitignore", "**/.ignore", "**/*.py"} <= globs

    helpers = open_doc(client, project / "helpers.py")
    await until(lambda: ("TSL101", 2) in codes(client, helpers), what="the helper's TSL101")
    (project / "train.py").write_text(TRAIN.replace("        log_loss(loss)\n", "    log_loss(loss)\n"))  # not open, no watcher event
    (project / "setup.cfg").write_text("[metadata]\nname = demo\n")
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri(project / "setup.cfg"))))
    await until(lambda: ("TSL101", 2) not in codes(client, helpers), what="the project re-read")
