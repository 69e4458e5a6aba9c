"""What the language server lints and re-lints: the open documents, the settings and project
of each, and which open documents an edit changes. No protocol here (server/protocol.py is
the pygls glue); every method returns the outcomes to publish.

A document is linted as `torchsync-lint check <its path>` lints its file, with the same
pyproject.toml settings, the same project view and the same cache (server/overlay.py), except
that every open buffer stands in for its file, saved or not. After a document is linted, the
other open documents whose results could have changed are linted again, and only those: a
document's results depend on its own text, its settings and the summaries of the modules
around it (Session.dependencies), so an edit that changes neither what the edited module
exports (its summary) nor what it imports re-lints nothing else, and one that does re-lints
exactly the open documents whose dependency digest moved.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from torchsync_lint.config import Config, ConfigError
from torchsync_lint.server.notebooks import NotebookBuffer
from torchsync_lint.server.overlay import BufferSession, Memory, is_python_path
from torchsync_lint.types import Finding


@dataclass
class LintOutcome:
    path: str
    text: str  # the text the findings are for (a notebook's Python view)
    findings: list[Finding] = field(default_factory=list)  # rule findings and TSL901-903
    syntax_error: Finding | None = None  # TSL900: not shown while the user is typing
    config_error: str | None = None  # the settings could not be read: nothing was linted
    config_file: str | None = None  # the pyproject.toml at fault, when known
    config_line: int = 1  # where in it (1-based), when the TOML parser says
    excluded: bool = False  # an `exclude` pattern matches the file
    root: str | None = None  # the project root its messages' paths are relative to


@dataclass
class Document:
    path: str  # absolute
    text: str  # Python source (a notebook: its Python view)
    version: int | None = None
    notebook: NotebookBuffer | None = None
    outcome: LintOutcome | None = None
    deps: str | None = None  # the summaries it was last linted against (a digest)
    parsed: str | None = None  # its last text that parsed: what the other modules see meanwhile
    exports: tuple | None = None  # (its summary's digest, its imports) at its last lint
    config_key: tuple | None = None


class Workspace:
    def __init__(self, *, use_cache: bool = True) -> None:
        self.documents: dict[str, Document] = {}
        self.memory = Memory()
        self.use_cache = use_cache
        self._configs: dict[str, tuple[tuple, Config | ConfigError]] = {}
        self._walks: dict[str, tuple[tuple, list[str]]] = {}

    # -- documents --------------------------------------------------------------------------
    def open(self, path: str, text: str, version: int | None = None, notebook: NotebookBuffer | None = None) -> list[LintOutcome]:
        if notebook is None and os.path.isfile(path) and not any(path in files for _, files in self._walks.values()):
            self._forget_files()  # a file the project listings have not seen yet
        self.documents[path] = Document(path, notebook.python if notebook else text, version, notebook)
        return self.lint(path)

    def update(self, path: str, text: str, version: int | None = None, notebook: NotebookBuffer | None = None) -> None:
        """Record an edit; the caller decides when to lint (debounced)."""
        doc = self.documents.get(path)
        if doc is None:
            self.documents[path] = doc = Document(path, text, version, notebook)
        doc.text, doc.version, doc.notebook = (notebook.python if notebook else text), version, notebook

    def close(self, path: str) -> list[LintOutcome]:
        """Forget the buffer (its file on disk counts again): the open documents that depended
        on what it said are linted again."""
        if self.documents.pop(path, None) is None:
            return []
        return self._dependents(skip=path)

    def lint(self, path: str) -> list[LintOutcome]:
        """Lint the document at ``path``, then the open documents its edit changed."""
        outcomes, moved = self.lint_document(path)
        return outcomes + (self.dependents(path) if moved else [])

    def lint_document(self, path: str) -> tuple[list[LintOutcome], bool]:
        """Lint the document at ``path`` alone (the server publishes it before looking at the
        others), and whether what it tells other modules changed (its summary or imports)."""
        doc = self.documents.get(path)
        if doc is None:
            return [], False
        before = doc.exports
        outcome = self._lint(doc)
        if outcome.syntax_error is not None:
            # Half-typed code: the rest of the project keeps seeing the last version that
            # parsed, so the other files' diagnostics do not flicker while the user types.
            doc.exports = before
            return [outcome], False
        doc.parsed = doc.text
        return [outcome], doc.notebook is None and doc.exports != before

    def dependents(self, path: str) -> list[LintOutcome]:
        """Lint again the other open documents whose dependencies moved."""
        return self._dependents(skip=path)

    def current(self, path: str) -> tuple[Document | None, list[LintOutcome]]:
        """The document with findings for its current text (linting it now if they are stale),
        and the outcomes that lint produced (to publish)."""
        doc = self.documents.get(path)
        if doc is None or (doc.outcome is not None and doc.outcome.text == doc.text):
            return doc, []
        return doc, self.lint(path)

    def files_changed(self) -> list[LintOutcome]:
        """Files were created, deleted or changed on disk (or a pyproject.toml): forget the
        project listings and re-lint the open documents whose settings or dependencies
        changed."""
        self._forget_files()
        outcomes = []
        for doc in list(self.documents.values()):
            config, key = self.config(doc.path)
            if key != doc.config_key:
                outcomes += self.lint(doc.path)
        return outcomes + self._dependents(skip=None, already={o.path for o in outcomes})

    def _forget_files(self) -> None:
        from torchsync_lint.project.layout import _module_file

        self._walks.clear()
        _module_file.cache_clear()  # its answers say which module files exist

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

    def _walk(self, root: str, config: Config) -> list[str]:
        """The project's Python files, as `check` walks them (excludes, .gitignore), kept
        until files change on disk."""
        from torchsync_lint.files import discover

        key = (config.source, tuple(config.exclude_patterns), config.respect_gitignore)
        found = self._walks.get(root)
        if found is None or found[0] != key:
            found = self._walks[root] = (key, discover([root], config, notes=[])[0])
        return found[1]

    # -- linting ------------------------------------------------------------------------------
    def _session(self, path: str, config: Config) -> BufferSession:
        from torchsync_lint.api import _config_digest
        from torchsync_lint.project.layout import find_root

        root, marked = find_root([path] if os.path.exists(path) else [str(Path(path).parent)])
        buffers = {d.path: d.text if d.path == path else (d.parsed or d.text) for d in self.documents.values() if d.notebook is None and is_python_path(d.path)}
        return BufferSession(
            root, [path], marked=marked, use_cache=self.use_cache, config_digest=_config_digest(config),
            walk=lambda top: self._walk(top, config), buffers=buffers, memory=self.memory,
        )

    def _lint(self, doc: Document, session: BufferSession | None = None) -> LintOutcome:
        config, doc.config_key = self.config(doc.path)
        if isinstance(config, ConfigError):
            outcome = _config_outcome(doc, str(config))
        elif config.is_excluded(doc.path):
            outcome = LintOutcome(doc.path, doc.text, excluded=True)
        else:
            try:
                outcome = self._run(doc, config, session)
            except ConfigError as exc:  # a per-file-ignores selector that names no rule
                outcome = _config_outcome(doc, str(exc))
        doc.outcome = outcome
        return outcome

    def _run(self, doc: Document, config: Config, session: BufferSession | None) -> LintOutcome:
        from torchsync_lint.catalog import rule_table
        from torchsync_lint.errors import file_error
        from torchsync_lint.files import MAX_SOURCE_BYTES

        codes = config.codes_for_path(doc.path, rule_table())
        if len(doc.text) > MAX_SOURCE_BYTES // 4 and len(doc.text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
            big = file_error(doc.path, "TSL902", f"too large to lint: more than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB")
            return LintOutcome(doc.path, doc.text, [big])
        if doc.notebook is not None:
            findings = self.linter(doc, config, codes)(doc.text)  # a notebook is linted alone, as `check` does
        else:
            session = session or self._session(doc.path, config)
            session.prepare()
            rel = session.layout.relpath(doc.path)
            findings = self.linter(doc, config, codes, session)(doc.text, session.analyses.pop(rel, None))
            doc.deps = session.dependencies(rel)
            doc.exports = (session.summary_digest(rel), tuple(sorted(session.graph().get(rel, ()))))
        syntax = next((f for f in findings if f.code == "TSL900"), None)
        root = str(session.layout.root) if session is not None else None
        return LintOutcome(doc.path, doc.text, [f for f in findings if f.code != "TSL900"], syntax, root=root)

    def linter(self, doc: Document, config: Config | None = None, codes: set[str] | None = None, session: BufferSession | None = None):
        """text (, prepared analysis) -> findings for ``doc``, with its settings and project
        view: what diagnostics, the fixer's rounds and "fix all" all lint with."""
        from torchsync_lint.catalog import rule_table
        from torchsync_lint.engine import lint_source

        if config is None:
            config, _ = self.config(doc.path)
            if isinstance(config, ConfigError):
                raise config
        codes = config.codes_for_path(doc.path, rule_table()) if codes is None else codes
        env = None
        if doc.notebook is None:
            if session is None:
                session = self._session(doc.path, config)
                session.prepare()
            env = session.env_for(doc.path)
        settings = config.settings()

        def lint(text: str, prepared=None) -> list[Finding]:
            return lint_source(text, doc.path, codes, settings, env=env, prepared=prepared)

        return lint

    def _dependents(self, skip: str | None, already: set[str] = frozenset()) -> list[LintOutcome]:
        """Lint again the open Python documents whose dependencies' summaries changed."""
        outcomes = []
        for doc in list(self.documents.values()):
            if doc.path == skip or doc.path in already or doc.notebook is not None or doc.outcome is None:
                continue
            config, key = self.config(doc.path)
            if isinstance(config, ConfigError) or key != doc.config_key or doc.outcome.excluded:
                continue
            session = self._session(doc.path, config)
            session.prepare()
            if session.dependencies(session.layout.relpath(doc.path)) != doc.deps:
                outcomes.append(self._lint(doc, session))
        return outcomes


def _pyproject_stamps(directory: Path) -> tuple:
    """(path, size, mtime) of every pyproject.toml from ``directory`` up: the settings are
    re-read when one of them is created, edited or deleted."""
    out = []
    for d in (directory, *directory.parents):
        candidate = d / "pyproject.toml"
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        out.append((str(candidate), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _config_outcome(doc: Document, message: str) -> LintOutcome:
    """Nothing linted: the settings cannot be read (and where the file says so)."""
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
