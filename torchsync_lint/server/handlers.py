"""The LSP methods the server answers, registered on a TorchsyncServer (protocol.py).

Documents: `textDocument/did{Open,Change,Save,Close}` for `.py`/`.pyi` files and
`notebookDocument/did{Open,Change,Save,Close}` for notebooks; diagnostics on open and save at
once, after the debounce while the user types. `workspace/didChangeWatchedFiles` (registered
when the client allows it) re-reads settings and project listings. Requests:
`textDocument/codeAction` (+ `codeAction/resolve`, which computes the edit only for the action
the user picks) and `textDocument/hover`.
"""

from __future__ import annotations

import logging
import os
import sys

from lsprotocol import types as lsp

from torchsync_lint.gitignore import IGNORE_FILES
from torchsync_lint.server import actions, stdio, text
from torchsync_lint.server.framing import DEFAULT_MAX_MESSAGE_BYTES
from torchsync_lint.server.protocol import SOURCE, LspLinesWorkspace, TorchsyncServer, path_of

logger = logging.getLogger(__name__)
# Files whose change re-reads settings and projects: the settings, a project root's other
# marker (project/layout.py; setup.py is a *.py), and the ignore files of a project's walk.
_SETTINGS_FILES = ("pyproject.toml", "setup.cfg", *IGNORE_FILES)
_WATCHED = ("**/*.py", *(f"**/{name}" for name in _SETTINGS_FILES))


def register(server: TorchsyncServer) -> None:  # noqa: C901 - one short closure per method
    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TorchsyncServer, params: lsp.InitializeParams) -> None:
        # pygls made its workspace just before calling this, and holds no document yet
        ls.workspace.__class__ = LspLinesWorkspace
        if params.trace is not None:  # pygls reads only `$/setTrace`
            ls.protocol.trace = params.trace
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)) and options["debounce"] >= 0:
            ls.debounce = options["debounce"] / 1000

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: TorchsyncServer, params: lsp.InitializedParams) -> None:
        ls.pool.submit(ls.warm_up)
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if not (watched and watched.dynamic_registration):
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions([lsp.FileSystemWatcher(glob_pattern=g) for g in _WATCHED])
        registration = lsp.Registration("torchsync-lint-watched-files", lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)
        try:
            await ls.client_register_capability_async(lsp.RegistrationParams([registration]))
        except Exception as exc:  # noqa: BLE001 - the server works without it (save re-reads)
            ls.window_log_message(lsp.LogMessageParams(lsp.MessageType.Log, f"could not watch files: {exc}"))

    # -- text documents -------------------------------------------------------------------------
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchsyncServer, params: lsp.DidOpenTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path is not None and path.endswith((".py", ".pyi")) and ls.workspace.get_notebook_document(cell_uri=params.text_document.uri) is None:
            ls.uris[path] = params.text_document.uri
            ls.schedule(path, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchsyncServer, params: lsp.DidChangeTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path in ls.uris:
            ls.schedule(path, ls.debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: TorchsyncServer, params: lsp.DidSaveTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path in ls.uris:
            ls.schedule(path, 0)
        elif path is not None and os.path.basename(path) in _SETTINGS_FILES:
            await _files_changed(ls)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: TorchsyncServer, params: lsp.DidCloseTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path in ls.uris and ls.uris[path] == params.text_document.uri:
            await _close(ls, path)
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(params.text_document.uri, []))

    # -- notebooks --------------------------------------------------------------------------------
    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TorchsyncServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        path = path_of(params.notebook_document.uri)
        if path is not None:  # an untitled notebook has no project and no settings: left alone, as an untitled .py
            ls.uris[path] = params.notebook_document.uri
            ls.schedule(path, 0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TorchsyncServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        path = path_of(params.notebook_document.uri)
        if path in ls.uris:
            ls.schedule(path, ls.debounce)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TorchsyncServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        path = path_of(params.notebook_document.uri)
        if path in ls.uris:
            ls.schedule(path, 0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def notebook_close(ls: TorchsyncServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        path = path_of(params.notebook_document.uri)
        if path in ls.uris:
            await _close(ls, path)
        for uri in sorted(ls.cell_diagnostics.pop(path, set())):
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def watched_files(ls: TorchsyncServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        await _files_changed(ls)

    # -- requests ---------------------------------------------------------------------------------
    kinds = [lsp.CodeActionKind.QuickFix, actions.FIX_ALL_KIND]

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=kinds, resolve_provider=True))
    async def code_action(ls: TorchsyncServer, params: lsp.CodeActionParams):
        found = await _document(ls, params.text_document.uri)
        if found is None:
            return None
        path, cell, outcome = found
        at = actions.covering(_findings(outcome, cell), *_range(outcome, cell, params.range, ls.encoding))
        only = params.context.only
        offered = [a for a in actions.offered(at, outcome.findings) if not only or any(a.lsp_kind == k or a.lsp_kind.startswith(f"{k}.") for k in only)]
        lazy = _resolves_edits(ls)
        out = []
        for action in offered:
            diagnostics = [ls.diagnostic(action.finding, _rows(outcome, cell), outcome.root)] if action.finding is not None else None
            item = lsp.CodeAction(action.title, kind=action.lsp_kind, diagnostics=diagnostics, is_preferred=action.preferred or None)
            if lazy:
                item.data = {"path": path, "kind": action.kind, "finding": actions.finding_key(action.finding) if action.finding else None}
            else:
                item.edit = await _edit_now(ls, path, action)
                if item.edit is None:
                    continue
            out.append(item)
        return out

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def resolve(ls: TorchsyncServer, item: lsp.CodeAction) -> lsp.CodeAction:
        data = item.data if isinstance(item.data, dict) else {}
        path = data.get("path")
        outcome = await _linted(ls, path) if isinstance(path, str) else None
        if outcome is None:
            return item
        finding = next((f for f in outcome.findings if actions.finding_key(f) == data.get("finding")), None)
        if data.get("kind") != actions.FIX_ALL and finding is None:
            return item  # edited since the actions were listed
        action = actions.Action(data.get("kind", ""), item.title, finding)
        item.edit = await _edit_now(ls, path, action)
        return item

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TorchsyncServer, params: lsp.HoverParams):
        found = await _document(ls, params.text_document.uri)
        if found is None:
            return None
        _, cell, outcome = found
        under = actions.covering(_findings(outcome, cell), *_range(outcome, cell, lsp.Range(params.position, params.position), ls.encoding))
        under = [f for f in under if f.severity != "error"]
        markdown = await ls.work(actions.hover, under)
        if markdown is None:
            return None
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, markdown))


async def _files_changed(ls: TorchsyncServer) -> None:
    ls.publish(await ls.work(ls.ws.files_changed))


async def _close(ls: TorchsyncServer, path: str) -> None:
    ls.uris.pop(path, None)
    ls.last_good.pop(path, None)
    ls.supersede(path)  # a lint already queued for it is dropped, not run on a closed buffer
    waiting = ls.waiting.pop(path, None)
    if waiting is not None:
        waiting.cancel()
    ls.publish(await ls.work(ls.ws.close, path))


def _current(ls: TorchsyncServer, path: str, snap):
    """(the outcome for the client's text ``snap``, the outcomes its lint produced, to publish)
    (worker thread). The outcome is never changed afterwards: the protocol thread reads it
    while the worker goes on with later edits."""
    ls.ws.update(path, *snap)
    doc, outcomes = ls.ws.current(path)
    return (doc.outcome if doc is not None else None), outcomes


async def _linted(ls: TorchsyncServer, path: str):
    """The outcome for the open document at ``path`` as the client has it now (linted now
    when its findings are stale); None when it is not open or was not linted."""
    snap = ls.snapshot(path) if path in ls.uris else None
    if snap is None:
        return None
    outcome, outcomes = await ls.work(_current, ls, path, snap)
    ls.publish(outcomes)
    return outcome


async def _document(ls: TorchsyncServer, uri: str):
    """(path, cell URI or None, outcome) for a request on ``uri``: one linted version of the
    document, the one the client had when it asked."""
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    if notebook is not None:
        path, cell = path_of(notebook.uri), uri
    else:
        path, cell = path_of(uri), None
    outcome = await _linted(ls, path)
    if outcome is None or (cell is not None and (outcome.notebook is None or cell not in outcome.notebook.numbers)):
        return None
    return path, cell, outcome


def _rows(outcome, cell: str | None) -> list[str]:
    """The lines of the outcome's text (a notebook's: of ``cell``), as LSP counts them."""
    return text.lines(outcome.notebook.text_of(cell) if cell is not None else outcome.text)


def _range(outcome, cell: str | None, rng: lsp.Range, encoding: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """A client range -> 1-based (line, column) pairs in the document (or in the cell)."""
    rows = _rows(outcome, cell)
    return (text.from_client(rows, text.Position(rng.start.line, rng.start.character), encoding),
            text.from_client(rows, text.Position(rng.end.line, rng.end.character), encoding))


def _findings(outcome, cell: str | None) -> list:
    """The document's findings (a notebook's: those in ``cell``)."""
    if cell is None:
        return outcome.findings
    number = outcome.notebook.numbers.get(cell)
    return [f for f in outcome.findings if f.cell == number]


def _resolves_edits(ls: TorchsyncServer) -> bool:
    doc = ls.client_capabilities.text_document
    support = doc.code_action.resolve_support if doc and doc.code_action else None
    return bool(support and "edit" in support.properties)


def _versioned_edits(ls: TorchsyncServer) -> bool:
    """Whether the client takes `documentChanges`: edits that say which version they are for
    (the client refuses them when the document has changed since)."""
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes)


async def _edit_now(ls: TorchsyncServer, path: str, action: actions.Action) -> lsp.WorkspaceEdit | None:
    uri = ls.uris.get(path)  # None: closed meanwhile
    return await ls.work(_edit, ls, path, uri, action, _versioned_edits(ls)) if uri is not None else None


def _edit(ls: TorchsyncServer, path: str, uri: str, action: actions.Action, versioned: bool) -> lsp.WorkspaceEdit | None:
    """The WorkspaceEdit of ``action`` on the document's current text (worker thread: the
    document and its text do not change while it runs). ``uri``: the document's."""
    doc = ls.ws.documents.get(path)
    try:
        texts = ls.ws.perform(path, action)
    except Exception:  # noqa: BLE001 - an action that fails is not offered, the server goes on
        logger.exception("%s: %s failed", SOURCE, action.title)  # stderr: the client's server log
        return None
    if not texts or doc is None:
        return None
    edits = {}  # URI -> (the version edited, its edits)
    for target, new in texts.items():
        if target == path:
            edits[uri] = doc.version, [_text_edit(doc.text, new, ls.encoding)]
        else:  # a notebook cell
            cell = doc.notebook.cells[doc.notebook.numbers[target] - 1]
            edits[target] = cell.version, [_text_edit(cell.text, new, ls.encoding)]
    if versioned:
        return lsp.WorkspaceEdit(document_changes=[
            lsp.TextDocumentEdit(lsp.OptionalVersionedTextDocumentIdentifier(target, version), changes)
            for target, (version, changes) in edits.items()])
    return lsp.WorkspaceEdit(changes={target: changes for target, (_, changes) in edits.items()})


def _text_edit(old: str, new: str, encoding: str) -> lsp.TextEdit:
    (start, end, content) = text.replacement(old, new)
    rows = text.lines(old)
    a, b = text.to_client(rows, *start, encoding), text.to_client(rows, *end, encoding)
    return lsp.TextEdit(lsp.Range(lsp.Position(*a), lsp.Position(*b)), content)


def build(*, debounce: float, use_cache: bool) -> TorchsyncServer:
    ls = TorchsyncServer(debounce=debounce, use_cache=use_cache)
    register(ls)
    return ls


def serve(*, debounce: float, use_cache: bool, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> int:
    """Serve LSP on stdin/stdout; the exit status (`exit` after `shutdown`: 0, without: 1)."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the protocol: a stray print must not corrupt it
    return stdio.serve(build(debounce=debounce, use_cache=use_cache), stdin, stdout, max_message_bytes)
