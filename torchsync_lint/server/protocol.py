"""The LSP glue (pygls): documents in, diagnostics, code actions and hovers out.

Everything that decides what to lint is in workspace.py; this module converts between the
protocol's types and ours, and schedules. The lint work runs on one worker thread, in the
order it was asked for, so the event loop keeps reading the client's messages (a change
arriving during a lint cancels the lint still waiting for its debounce, not the one
running). A lint whose document changed again before the lint starts is dropped (the lint
of the newer text is queued behind it): a burst of changes with no debounce queues no lint
per keystroke. A lint about to start also waits (QUIET_WAIT at most) while input the client
already sent is still to be handled, since a change in it would supersede the lint.
Diagnostics for a text already changed are not published either.

While a buffer does not parse, its last diagnostics are published again, unchanged, plus one
for the syntax error (as Pylance and ruff do): typing `x = (` does not blank them out.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace import Workspace as PyglsWorkspace

from torchsync_lint import __version__
from torchsync_lint.server import text
from torchsync_lint.server.notebooks import CellDocument, NotebookBuffer
from torchsync_lint.server.workspace import LintOutcome, Workspace

SOURCE = "torchsync-lint"
_REMOTE = re.compile(r"is called every step from ([^\s:()`]+):(\d+)")
logger = logging.getLogger(__name__)
QUIET_WAIT = 0.25  # seconds a lint waits at most for the client's input already read to be handled


class LspLinesDocument(TextDocument):
    """pygls's text document with its lines broken as LSP breaks them (text.lines). pygls
    splits with str.splitlines, which also breaks at form feeds and Unicode separators: an
    incremental edit below one would land a line above where the editor made it."""

    @property
    def lines(self):
        return tuple(text.lines(self.source))


class LspLinesWorkspace(PyglsWorkspace):
    """pygls's workspace, its text documents (files and notebook cells) LspLinesDocuments."""

    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None):
        return LspLinesDocument(doc_uri, source=source, version=version, language_id=language_id,
                                sync_kind=self._sync_kind, position_codec=self.position_codec)


class TorchsyncServer(LanguageServer):
    def __init__(self, *, debounce: float, use_cache: bool) -> None:
        super().__init__(
            SOURCE, __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[lsp.NotebookDocumentFilterWithCells(cells=[lsp.NotebookCellLanguage("python")], notebook="*")],
                save=True,
            ),
        )
        self.ws = Workspace(use_cache=use_cache)
        self.debounce = debounce
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="torchsync-lint")
        self.waiting: dict[str, asyncio.Task] = {}  # path -> a lint still in its debounce
        # path -> how many lints were asked for: a lint about to start that is not the latest
        # is for a text already superseded (read on the worker thread; an int swap is atomic)
        self.generation: dict[str, int] = {}
        # path -> the diagnostics of its last text that parsed (a notebook's: by cell URI)
        self.last_good: dict[str, object] = {}
        self.uris: dict[str, str] = {}  # path -> the URI of the open document or notebook
        self.cell_diagnostics: dict[str, set[str]] = {}  # notebook path -> cells with diagnostics
        # pyproject.toml URI ("" when the error names no file) -> the error shown for it, once
        # until it is fixed
        self.config_errors: dict[str, str] = {}
        # whether input from the client is read but not yet handled (stdio.py sets it)
        self.input_pending: Callable[[], bool] = lambda: False

    # -- running work -----------------------------------------------------------------------
    async def work(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def schedule(self, path: str, delay: float) -> None:
        old = self.waiting.pop(path, None)
        if old is not None:
            old.cancel()
        generation = self.supersede(path)
        self.waiting[path] = asyncio.ensure_future(self._lint_after(path, delay, generation))

    def supersede(self, path: str) -> int:
        """Mark the lints asked for ``path`` so far as out of date; the number of the next."""
        self.generation[path] = generation = self.generation.get(path, 0) + 1
        return generation

    async def _lint_after(self, path: str, delay: float, generation: int) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        await self._input_read()
        current = asyncio.current_task()
        if self.waiting.get(path) is current:
            del self.waiting[path]  # running now: a later change no longer cancels it
        snap = self.snapshot(path)
        if snap is None:
            return
        done = await self.work(self._guarded, ([], []), self._update_and_lint, path, snap, generation)
        if done is None:
            self.trace(f"{path}: lint of version {snap[1]} dropped, superseded before it started")
            return
        self.trace(f"{path}: linted version {snap[1]}")
        outcomes, others = done
        self.publish(outcomes)  # the edited document first; then the others it changed
        if others:
            self.publish(await self.work(self._guarded, [], self.ws.relint, others))

    async def _input_read(self, limit: float = QUIET_WAIT) -> None:
        """Wait (``limit`` at most) while the client's input already arrived but is not yet
        handled: a change in it would supersede this lint, and it would be cancelled waiting
        here instead of running (what makes a storm of changes with no debounce cheap)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self.input_pending() and loop.time() < deadline:
            await asyncio.sleep(0.002)

    def _update_and_lint(self, path: str, snap, generation: int) -> tuple[list[LintOutcome], list[str]] | None:
        if self.generation.get(path) != generation:
            return None  # a later change (or the close) has its own turn behind this one
        self.ws.update(path, *snap)
        return self.ws.lint_document(path)

    def _guarded(self, failed, fn, *args):
        """``fn(*args)``, or ``failed`` (logged) when it raises: one document's failure must
        not stop the server."""
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001
            logger.exception("%s: %s failed on %s", SOURCE, fn.__name__, args[0])  # stderr: the client's server log
            return failed

    def snapshot(self, path: str):
        """(text, version, notebook) of the open document at ``path`` as the client has it now."""
        uri = self.uris.get(path)
        if uri is None:
            return None
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            cells = []
            for cell in notebook.cells:
                doc = self.workspace.text_documents.get(unquote(cell.document))  # pygls keys them unquoted
                code = cell.kind == lsp.NotebookCellKind.Code
                if doc is None:
                    cells.append(CellDocument(cell.document, "", code))
                else:
                    cells.append(CellDocument(cell.document, doc.source, code, doc.language_id or "python", doc.version))
            buffer = NotebookBuffer(cells)
            return buffer.json(), notebook.version, buffer
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            return None
        return doc.source, doc.version, None

    def trace(self, message: str) -> None:
        """`$/logTrace` when the client asked for a trace (`$/setTrace`, or `trace` in
        initialize): what the server did and skipped, for a client's debugging."""
        if self.protocol.trace in (lsp.TraceValue.Messages, lsp.TraceValue.Verbose):
            self.log_trace(lsp.LogTraceParams(message))

    def warm_up(self) -> None:
        """Import the parser and the rules on the worker thread while the editor is still
        opening files, so that the first diagnostics do not wait for them."""
        from torchsync_lint.engine import lint_source  # noqa: F401
        from torchsync_lint.rule import load_rules

        load_rules()

    # -- publishing ---------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        value = self.workspace.position_encoding
        return str(getattr(value, "value", value) or "utf-16")

    def publish(self, outcomes: list[LintOutcome]) -> None:
        for outcome in outcomes:
            self._config_report(outcome)
            snap = self.snapshot(outcome.path)
            if snap is None or snap[0] != outcome.text:
                continue  # closed, or edited since: the newer lint publishes
            notebook = snap[2]
            if notebook is None:
                rows = text.lines(outcome.text)
                if outcome.syntax_error is None:
                    diagnostics = self.last_good[outcome.path] = [self.diagnostic(f, rows, outcome.root) for f in outcome.findings]
                else:  # half-typed: what it said last, and why it says nothing new
                    diagnostics = [*self.last_good.get(outcome.path, []), self.syntax_diagnostic(outcome.syntax_error, rows)]
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(self.uris[outcome.path], diagnostics, snap[1]))
            else:
                self._publish_cells(outcome, notebook)

    def _publish_cells(self, outcome: LintOutcome, notebook: NotebookBuffer) -> None:
        by_cell: dict[str, list[lsp.Diagnostic]] = {}
        if outcome.syntax_error is None:
            for finding in outcome.findings:
                uri = notebook.uris.get(finding.cell or 1)
                if uri is not None:
                    by_cell.setdefault(uri, []).append(self.diagnostic(finding, text.lines(notebook.text_of(uri)), outcome.root))
            self.last_good[outcome.path] = {uri: list(found) for uri, found in by_cell.items()}
        else:  # the cells still there keep what they said last; the broken one says why
            cells = set(notebook.uris.values())
            by_cell = {uri: list(found) for uri, found in self.last_good.get(outcome.path, {}).items() if uri in cells}
            uri = notebook.uris.get(outcome.syntax_error.cell or 1)
            if uri is not None:
                by_cell.setdefault(uri, []).append(self.syntax_diagnostic(outcome.syntax_error, text.lines(notebook.text_of(uri))))
        before = self.cell_diagnostics.get(outcome.path, set())
        for uri in sorted(before | set(by_cell)):
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, by_cell.get(uri, [])))
        self.cell_diagnostics[outcome.path] = set(by_cell)

    def diagnostic(self, finding, rows: list[str], root: str | None) -> lsp.Diagnostic:
        from torchsync_lint.rule import load_rules

        rule = load_rules().get(finding.code)
        start = text.to_client(rows, finding.line, finding.column, self.encoding)
        end = text.to_client(rows, finding.end_line, finding.end_column, self.encoding)
        error = finding.severity == "error"
        related = None
        m = _REMOTE.search(finding.message)
        if m and root is not None and (Path(root) / m.group(1)).is_file():
            line = int(m.group(2)) - 1
            where = lsp.Location(from_fs_path(str(Path(root) / m.group(1))), lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)))
            related = [lsp.DiagnosticRelatedInformation(where, f"called every step from here ({m.group(1)}:{m.group(2)})")]
        return lsp.Diagnostic(
            range=lsp.Range(lsp.Position(*start), lsp.Position(*end)),
            message=finding.message,
            severity=lsp.DiagnosticSeverity.Error if error else lsp.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=lsp.CodeDescription(rule.docs_url()) if rule is not None else None,
            source=SOURCE,
            related_information=related,
        )

    def syntax_diagnostic(self, finding, rows: list[str]) -> lsp.Diagnostic:
        """TSL900 where the parser stopped, one character wide (a zero-width range is easy to
        miss in an editor)."""
        start = text.to_client(rows, finding.line, finding.column, self.encoding)
        end = text.to_client(rows, finding.line, finding.column + 1, self.encoding)
        return lsp.Diagnostic(lsp.Range(lsp.Position(*start), lsp.Position(*end)), finding.message,
                              lsp.DiagnosticSeverity.Error, code=finding.code, source=SOURCE)

    def _config_report(self, outcome: LintOutcome) -> None:
        """A pyproject.toml that cannot be read is a message (once) and a diagnostic on the
        file; both go away when a document under it lints again."""
        if outcome.config_error is None:
            for uri, message in sorted(self.config_errors.items()):
                pyproject = path_of(uri) if uri else None
                if pyproject is None or Path(outcome.path).is_relative_to(Path(pyproject).parent):
                    if uri:
                        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))
                    del self.config_errors[uri]
            return
        uri = from_fs_path(outcome.config_file) if outcome.config_file is not None else ""
        if self.config_errors.get(uri) != outcome.config_error:
            self.config_errors[uri] = outcome.config_error
            self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, f"{SOURCE}: {outcome.config_error}; nothing is linted until it is fixed"))
            if uri:
                line = outcome.config_line - 1
                where = lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0))
                diagnostic = lsp.Diagnostic(where, outcome.config_error, lsp.DiagnosticSeverity.Error, source=SOURCE)
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, [diagnostic]))


def path_of(uri: str) -> str | None:
    path = to_fs_path(uri)
    return str(Path(path).absolute()) if path else None
