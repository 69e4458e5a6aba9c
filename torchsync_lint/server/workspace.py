"""What the language server lints and re-lints: the open documents, the settings and project
of each, and which open documents an edit changes. No protocol here (server/protocol.py is
the pygls glue). The methods that lint return the outcomes to publish; the server calls them
all on one worker thread.

It is a thin adapter over the pipeline every entry point shares (project/session.py): one
long-lived Session per project root, as `check` builds it, with each open buffer given to it
as the file's source (``set_source``), saved or not. A document is linted with
``Session.lint``, so it gets the findings `check <its path>` would give the file with that
text. ``set_source`` says which files' results an edit may change: the file itself, and when
its summary or its imports changed, the connected modules around it; the open documents
among those are linted again, and only those.

A buffer that does not parse is not given to the Session: its outcome has no findings but
the syntax error (the server shows its last findings beside it while the user types), and
the rest of the project keeps seeing its last version that parsed.
"""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchsync_lint.config import Config, ConfigError
from torchsync_lint.server.notebooks import NotebookBuffer
from torchsync_lint.types import Finding

_LINTED = (".py", ".pyi", ".ipynb")


@dataclass
class LintOutcome:
    path: str
    text: str  # the document text the findings are for (a notebook: as notebooks.py writes it)
    findings: list[Finding] = field(default_factory=list)  # rule findings and TSL901-903, in the file's terms (a notebook's: cell and line there)
    syntax_error: Finding | None = None  # TSL900: the server shows it beside the last findings that parsed
    config_error: str | None = None  # the settings could not be read: nothing was linted
    config_file: str | None = None  # the pyproject.toml at fault, when known
    config_line: int = 1  # where in it (1-based), when the TOML parser says
    root: str | None = None  # the project root its messages' paths are relative to
    notebook: NotebookBuffer | None = None  # a notebook's cells, as ``text`` was made from them


@dataclass
class Document:
    path: str  # absolute
    text: str  # a .py buffer, or a notebook's cells as notebooks.py writes them
    version: int | None = None  # the editor's version of ``text`` (a notebook's: its cells')
    notebook: NotebookBuffer | None = None
    outcome: LintOutcome | None = None
    given: str | None = None  # the text its Session holds for it (its last version that parsed)
    config_key: tuple | None = None
    session_key: tuple | None = None  # the Session it was last linted in (Workspace._sessions)


class Workspace:
    def __init__(self, *, use_cache: bool = True) -> None:
        self.documents: dict[str, Document] = {}
        self.use_cache = use_cache
        self._configs: dict[str, tuple[tuple, Config | ConfigError]] = {}
        self._sessions: dict[tuple, object] = {}  # (root or file, marked, settings) -> Session

    # -- documents --------------------------------------------------------------------------
    def open(self, path: str, text: str, version: int | None = None, notebook: NotebookBuffer | None = None) -> list[LintOutcome]:
        self.update(path, text, version, notebook)
        return self.lint(path)

    def update(self, path: str, text: str, version: int | None = None, notebook: NotebookBuffer | None = None) -> None:
        """Record an edit; the caller decides when to lint (debounced). A notebook's ``text``
        is ignored: its cells are ``notebook``."""
        text = notebook.json() if notebook is not None else text
        doc = self.documents.get(path)
        if doc is None:
            self.documents[path] = Document(path, text, version, notebook)
        else:
            doc.text, doc.version, doc.notebook = text, version, notebook

    def close(self, path: str) -> list[LintOutcome]:
        """Forget the buffer (its file on disk counts again): the open documents whose results
        that changes are linted again."""
        doc = self.documents.pop(path, None)
        if doc is None or doc.given is None:
            return []
        again: set[str] = set()
        for session in self._sessions.values():  # any may hold it: each took the open buffers when made
            if session.layout.contains(path):
                again |= {str(session.root / rel) for rel in session.clear_source(path)}
        self._drop_unused_sessions()
        return self.relint(sorted(again))

    def lint(self, path: str) -> list[LintOutcome]:
        """Lint the document at ``path``, then the open documents its edit changed."""
        outcomes, others = self.lint_document(path)
        return outcomes + self.relint(others)

    def lint_document(self, path: str) -> tuple[list[LintOutcome], list[str]]:
        """Lint the document at ``path`` alone (the server publishes it before the others), and
        the other open documents whose results its edit may have changed."""
        doc = self.documents.get(path)
        if doc is None:
            return [], []
        if self._fresh(doc):  # linted already (a hover in the debounce, a save of that text)
            return [doc.outcome], []
        outcome, changed = self._lint(doc)
        return [outcome], sorted(p for p in changed if p != path and p in self.documents)

    def relint(self, paths: list[str]) -> list[LintOutcome]:
        return [self._lint(self.documents[p])[0] for p in paths if p in self.documents]

    def current(self, path: str) -> tuple[Document | None, list[LintOutcome]]:
        """The document with findings for its current text (linting it now if they are stale),
        and the outcomes that lint produced (to publish)."""
        doc = self.documents.get(path)
        if doc is None or self._fresh(doc):
            return doc, []
        return doc, self.lint(path)

    def _fresh(self, doc: Document) -> bool:
        """Whether ``doc``'s outcome is for its text (and cells) under its settings as they are
        now. The other causes of change (an open document's edit, files on disk) re-lint it."""
        outcome = doc.outcome
        if outcome is None or outcome.text != doc.text:
            return False
        if (outcome.notebook and outcome.notebook.uris) != (doc.notebook and doc.notebook.uris):
            return False
        return self.config(doc.path)[1] == doc.config_key

    def files_changed(self) -> list[LintOutcome]:
        """Files were created, deleted or changed on disk (or a pyproject.toml or an ignore
        file): re-read the projects, and re-lint the open documents whose settings changed or
        whose results the Sessions say may have."""
        from torchsync_lint.project.layout import clear_marker_memo

        clear_marker_memo()  # a pyproject.toml created or removed moves a project root
        again: set[str] = set()
        for doc in self.documents.values():
            if self.config(doc.path)[1] != doc.config_key:
                again.add(doc.path)
        self._drop_unused_sessions()  # re-walking a project no open document is in is waste
        for session in list(self._sessions.values()):
            again |= {str(session.root / rel) for rel in session.refresh()}
        return self.relint(sorted(p for p in again if p in self.documents))

    # -- settings -----------------------------------------------------------------------------
    def config(self, path: str) -> tuple[Config | ConfigError, tuple]:
        """The settings `check` would use for ``path`` (or the error it would exit 2 with),
        re-read whenever a pyproject.toml above it changes."""
        from torchsync_lint.api import config_for
        from torchsync_lint.catalog import rule_table

        directory = Path(path).parent
        stamps = _pyproject_stamps(directory)
        memo = self._configs.get(str(directory))
        if memo is not None and memo[0] == stamps:
            return memo[1], stamps
        try:
            config: Config | ConfigError = config_for([str(directory)] if directory.is_dir() else [])
            config.enabled_codes(rule_table())  # unknown selectors: an error now, as in the CLI
        except ConfigError as exc:
            config = exc
        self._configs[str(directory)] = (stamps, config)
        return config, stamps

    # -- sessions -----------------------------------------------------------------------------
    def _session(self, doc: Document, config: Config):
        """The Session of ``doc``'s project under ``config`` (made on first use, and given the
        open buffers under its root). Outside any project, a Session of the file alone, as
        `check <file>` makes."""
        from torchsync_lint.project.layout import project_root
        from torchsync_lint.project.sessions import new_session

        root, marked = project_root(doc.path)
        key = (str(root) if marked else doc.path, marked, doc.config_key)
        doc.session_key = key
        session = self._sessions.get(key)
        if session is None:
            for old in [k for k in self._sessions if k[:2] == key[:2]]:  # the settings changed
                del self._sessions[old]
            session = self._sessions[key] = new_session(doc.path, config, use_cache=self.use_cache)
            for other in self.documents.values():  # the buffers of its files stand for them
                if other.given is not None and (other is doc or (marked and project_root(other.path)[0] == root)):
                    session.set_source(other.path, other.given)
        return session

    def _drop_unused_sessions(self) -> None:
        used = {doc.session_key for doc in self.documents.values()}
        for key in [k for k in self._sessions if k not in used]:
            del self._sessions[key]

    # -- linting ------------------------------------------------------------------------------
    def _lint(self, doc: Document) -> tuple[LintOutcome, set[str]]:
        """(``doc``'s outcome, the paths of the files whose results its edit may change)."""
        config, doc.config_key = self.config(doc.path)
        if isinstance(config, ConfigError):
            outcome, changed = _config_outcome(doc, str(config)), set()
        elif config.is_excluded(doc.path) or not doc.path.endswith(_LINTED):
            outcome, changed = LintOutcome(doc.path, doc.text), set()  # no findings, as `check` skips it
        else:
            try:
                outcome, changed = self._run(doc, config)
            except ConfigError as exc:  # a per-file-ignores selector that names no rule
                outcome, changed = _config_outcome(doc, str(exc)), set()
        outcome.notebook = doc.notebook
        doc.outcome = outcome  # never changed after this: the server's handlers read it while the worker goes on
        return outcome, changed

    def _run(self, doc: Document, config: Config) -> tuple[LintOutcome, set[str]]:
        from torchsync_lint import sources
        from torchsync_lint.errors import file_error
        from torchsync_lint.files import MAX_SOURCE_BYTES

        if len(doc.text) > MAX_SOURCE_BYTES // 4 and len(doc.text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
            big = file_error(doc.path, "TSL902", f"too large to lint: more than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB")
            return LintOutcome(doc.path, doc.text, [big]), set()
        source = sources.read(doc.path, doc.text)
        problem = _does_not_parse(doc.path, source)
        if problem is not None:  # half-typed: no findings, and the project keeps its last version
            return LintOutcome(doc.path, doc.text, syntax_error=problem), set()
        session = self._session(doc, config)
        changed = session.set_source(doc.path, doc.text) if doc.given != doc.text else set()
        doc.given = doc.text
        result = session.lint(doc.path)
        syntax = next((e for e in result.errors if e.code == "TSL900"), None)
        findings = [*result.findings, *(e for e in result.errors if e.code != "TSL900")]
        outcome = LintOutcome(doc.path, doc.text, findings, syntax, root=str(session.root))
        return outcome, {str(session.root / rel) for rel in changed}

    @contextmanager
    def editing(self, path: str):
        """For a code action on the document at ``path``: (its module text, that text's
        findings, ``text -> findings`` for versions of it, and the way back from an edited
        module to the document's texts), linted as its diagnostics are."""
        from torchsync_lint import sources

        doc = self.documents[path]
        config, _ = self.config(path)
        if isinstance(config, ConfigError):
            raise config
        source = sources.read(path, doc.text)
        session = self._session(doc, config)
        with session.editing(path) as lint:
            yield source.python, lint(source.python), lint, source

    def perform(self, path: str, action) -> dict[str, str] | None:
        """What ``action`` (actions.Action, its finding in the document's terms) leaves: the
        new text of the document, or of each notebook cell it changes (by cell URI). None when
        it cannot be done or the document changed since it was listed."""
        from torchsync_lint.notebook import NotebookError
        from torchsync_lint.server import actions

        doc = self.documents.get(path)
        if doc is None or doc.outcome is None or doc.outcome.text != doc.text or doc.given != doc.text:
            return None
        with self.editing(path) as (module, findings, lint, source):
            target = None
            if action.finding is not None:
                key = actions.finding_key(action.finding)
                target = next((f for f in findings if actions.finding_key(source.to_file(f)) == key), None)
                if target is None:
                    return None
            new = actions.perform(replace(action, finding=target), module, path, findings, lint)
        if new is None:
            return None
        if doc.notebook is None:
            return {path: new}
        try:
            return {doc.notebook.uris[number]: text for number, text in source.notebook.cell_texts(new).items()}
        except NotebookError:
            return None


def _does_not_parse(path: str, source) -> Finding | None:
    """TSL900 for a module Python cannot parse (a notebook's: at its first such cell), found
    with Python's own parser, many times faster than the engine's."""
    from torchsync_lint.errors import file_error
    from torchsync_lint.pytree import parse_tree

    if source.python is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_tree(source.python)
    except SyntaxError as exc:
        error = file_error(path, "TSL900", f"cannot parse: {exc.msg}", exc.lineno or 1, max(exc.offset or 1, 1))
        return source.file_errors([error], path)[0]
    except (ValueError, RecursionError, MemoryError) as exc:
        return file_error(path, "TSL900", f"cannot parse: {type(exc).__name__}")
    return None


def _pyproject_stamps(directory: Path) -> tuple:
    """(path, size, mtime) of every pyproject.toml from ``directory`` up, and from its resolved
    path up (config.find_pyproject walks that one): the settings are re-read when one of them
    is created, edited or deleted."""
    out = []
    resolved = directory.resolve()
    for d in dict.fromkeys((directory, *directory.parents, resolved, *resolved.parents)):
        candidate = d / "pyproject.toml"
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        out.append((str(candidate), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _config_outcome(doc: Document, message: str) -> LintOutcome:
    """Nothing linted: the settings cannot be read (and where the file says so)."""
    import re

    path = _config_file(message, doc.config_key or ())
    line = 1
    m = re.search(r"at line (\d+), column \d+", message)
    if m:
        line = int(m.group(1))
    elif path is not None and "at end of document" in message:
        try:
            line = max(len(Path(path).read_text(encoding="utf-8", errors="replace").splitlines()), 1)
        except OSError:
            pass
    return LintOutcome(doc.path, doc.text, config_error=message, config_file=path, config_line=line)


def _config_file(message: str, stamps: tuple) -> str | None:
    """The pyproject.toml a ConfigError names (its messages start with the file's path)."""
    for path, _, _ in stamps:
        for spelled in (path, str(Path(path).resolve())):
            if message.startswith(spelled + ":"):
                return path
    return None
