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
from tests.test_server import CONFIG, apply_edits, codes, open_doc, project, published, settle, until, uri, vscode  # noqa: E402,F401


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
