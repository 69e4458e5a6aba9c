"""One project's pipeline: every entry point lints through a Session (check, --fix, --diff,
--add-noqa, --show-suggestions, --statistics, stdin, notebooks, flake8, pre-commit, verify,
the language server), so a file gets the same findings whichever way it is linted.

A Session is the project of one root (the nearest pyproject.toml, setup.cfg, setup.py or .git
above a file; project/layout.py): the `.py` files and notebooks its walk finds, nested
projects left out. Outside any project (no marker above the file) the project is just the
files named together. A module is linted with the view over its scope (project/demand.py:
the modules that may call it and those they use, name by name, up to `project-depth` imports
away), which holds everything the project can tell it: the view is the same whether the
module is linted alone, with its neighbours or in a run over the whole tree, and its cost is
its scope's. A module whose scope holds no other is linted alone. The import graph
(project/graph.py, its connected components) says which files an edit may change.

**Public API** (stable; the language server builds on it):

- ``Session(root, config, marked=True, use_cache=True, files=())``: ``files`` are the files
  a run will lint (``prepare`` summarises what they need). ``Sessions.for_files``
  (project/sessions.py) groups a run's files by their own project roots (a monorepo holds
  several).
- ``lint(path, *, text=None, report_as=None, codes=None, noqa=True) -> FileResult``: the
  findings of ``path`` under the project view, through the cache. ``text``: its content in
  hand (stdin, an editor's buffer), which stands for the file in the whole project.
- ``set_source(path, text) -> set[str]``: from now on ``path``'s content is ``text`` (an
  unsaved buffer; a notebook's JSON text), for its own lint and for what the project tells
  every other module; ``clear_source(path)`` goes back to the disk. Both return the project
  files (paths relative to the root) whose results may have changed: the file itself, and
  when its summary (what it exports, with line numbers) or its imports changed, the
  connected modules of its component (before and after the edit).
- ``refresh() -> set[str]``: re-read the project from disk (after a save, a checkout); the
  files whose results may have changed.
- ``dependents(path) -> set[str]``: the files whose results depend on ``path``'s module.
- ``editing(path)``: a context giving ``text -> findings`` for successive versions of one
  module (the fixer's rounds, --add-noqa's re-check), each linted with what the project says
  about that version; ``path``'s source is restored on exit.
- ``prepare(jobs)``: in ``jobs`` processes, the summaries the cache lacks for the scopes of
  the files to lint.

**Cache keys** (.torchsync_cache/, project/cache.py; each also holds the code fingerprint:
the tool's code, the Python minor version and the libcst release; no key holds a timestamp,
and nothing is cut off at a size the whole-tree view does not also have):

- a module's import names: its text (SHA-256);
- the import graph: the project's files, its source roots, every file's text;
- a module's summary: its path, its text, the settings, the summary format (an entry holds
  the fields computed by then: the deferred ones, project/deferred.py, are computed again
  from the module when a later run reads them);
- a module's outline (project/outline.py): its text (SHA-256);
- a file's findings: its path as reported, its text, the rules selected for it, the
  settings, the installed torchmetrics release, whether `# noqa` is applied here, and when its
  scope holds other modules, the scope's digest: the project's files, the source roots, the
  settings, `project-depth`, the summary and outline formats, and the texts of the modules of
  its scope and of every module whose outline decided it (everything its scope's summaries
  are made from, so none is computed to find a result still valid).

In-memory sources (``set_source``, ``editing``) are never written to the cache: their import
names, summaries, graph and component digests are worked out afresh; only their findings are
looked up there, by content (the same text saved to disk has the same key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from torchsync_lint import sources
from torchsync_lint.config import Config
from torchsync_lint.errors import file_error
from torchsync_lint.files import ReadError
from torchsync_lint.parallel import keep_out_of_collections
from torchsync_lint.project import checks, deferred
from torchsync_lint.project.cache import Cache, digest
from torchsync_lint.project.file_index import FileIndex, file_stat
from torchsync_lint.project.session_graph import ImportGraph
from torchsync_lint.project.session_scope import DemandScope
from torchsync_lint.project.layout import Layout, project_root
from torchsync_lint.project.summarizing import Summarizers, analyse, summarize_file, summary_of, text_sha
from torchsync_lint.project.view import SUMMARY_VERSION, ProjectView
from torchsync_lint.types import FileResult, Finding

_KEEP_ANALYSES_BYTES = 8 << 20  # parsed modules kept for the lint pass (avoids parsing twice)
MODULE_SUFFIXES = (".py", ".ipynb")


class Session(DemandScope, ImportGraph):
    def __init__(self, root: Path | str, config: Config | None = None, *, marked: bool = True, use_cache: bool = True, files=()) -> None:
        """``marked``: a project marker defines ``root`` and the project is its walk; without
        one the project is ``files`` (the files named together) and nothing is cached."""
        self.config = config or Config()
        # The settings in force at the root: every file of the project has them (a directory
        # with its own pyproject.toml is another project), whichever file the run named first.
        here = self.config.for_path(str(root))
        self.settings = here.settings()
        self.depth = here.project_depth  # how far the view follows a name (project/demand.py)
        self.marked = marked
        self.layout = Layout(Path(root))
        self.root = self.layout.root
        self.cache = Cache(self.root, use_cache and marked, base=here.cache_dir)
        self._index = FileIndex(self.cache)  # (the texts' hashes by the files' stats: a warm run reads no other module)
        self._named = sorted({self.layout.relpath(f) for f in files if f != "-" and self.layout.contains(f) and f.endswith(MODULE_SUFFIXES)})
        self._overlays: dict[str, str | bytes] = {}  # rel -> the file's content, in memory
        self._edits: dict[str, str] = {}  # rel -> the module's text in a fix round (editing())
        self._forget(everything=True)
        self.analyses: dict[str, object] = {}  # rel -> env-free ModuleAnalysis, for reuse
        self._kept = 0
        self._linting: dict[str, object] = {}  # rel -> the analysis its lint in progress uses

    def _forget(self, everything: bool = False, rel: str | None = None) -> None:
        """Drop what was read or worked out (about ``rel``, or ``everything``)."""
        memos = ("_sources", "_shas", "_names", "_summaries", "_digests", "_outlines", "_read_stats")
        self._demand = None  # the scopes: any change may move them (project/demand.py)
        self._scope_memo: dict = {}
        self._project_texts: str | None = None  # (a digest of every module's text: session_scope.py)
        if everything:
            for name in memos:
                setattr(self, name, {})
            self._modules = None
            self._summarizers = Summarizers(_KEEP_ANALYSES_BYTES)
        else:
            for name in memos:
                getattr(self, name).pop(rel, None)
            self._release_unheld(rel, self._take_analysis(rel))
            self._release_all(self._summarizers.drop(rel))
            if rel in (self._modules or ()) and self._graph is not None:
                self._dirty.add(rel)  # the same files: only its own import edges are redone
                self._views, self._deps = {}, {}
                return
            self._modules = None
        self._graph: dict | None = None
        self._dirty: set[str] = set()
        self._unread: set[str] = set()  # modules whose import rows the graph has not read yet
        self._views: dict[tuple[str, ...], ProjectView] = {}
        self._deps: dict[str, str] = {}

    # -- the project's files and their texts ----------------------------------------------------
    def modules(self) -> list[str]:
        """The project's modules (paths relative to the root): `.py` files and notebooks."""
        if self._modules is None:
            found = set(self._walk() if self.marked else self._named)
            found.update(rel for rel in self._overlays if rel.endswith(MODULE_SUFFIXES))
            self._modules = sorted(found)
            self.layout.set_modules(m for m in self._modules if m.endswith(".py"))
        return self._modules

    def _walk(self) -> list[str]:
        from torchsync_lint.files import discover

        out = []
        for path in discover([str(self.root)], self.config, notes=[])[0]:
            if path.endswith(MODULE_SUFFIXES) and project_root(path)[0] == self.root:  # a nested project is its own
                out.append(self.layout.relpath(path))
        return out

    def _source(self, rel: str) -> sources.Source | None:
        if rel not in self._sources:
            path = str(self.root / rel)
            if rel not in self._overlays:
                self._read_stats[rel] = file_stat(path)  # (before the read: a file saved meanwhile is read again next run)
            try:
                self._sources[rel] = sources.read(path, self._overlays.get(rel), report_as=rel)
            except ReadError:
                self._sources[rel] = None
            known = self._shas.get(rel)
            if known is not None and rel not in self._edits and self._sources[rel] is not None and self._sources[rel].python is not None:
                if text_sha(self._sources[rel].python) != known:  # (the index's hash, of a file saved since: the text read wins)
                    self._shas[rel] = text_sha(self._sources[rel].python)
        return self._sources[rel]

    def _text(self, rel: str) -> str | None:
        """The module as the engine sees it (a notebook: its cells joined), or None."""
        if rel in self._edits:
            return self._edits[rel]
        source = self._source(rel)
        return source.python if source is not None else None

    def _sha(self, rel: str) -> str | None:
        if rel not in self._shas:
            if not self._in_memory(rel) and rel not in self._sources:
                known = self._index.sha(rel, file_stat(str(self.root / rel)))
                if known is not None:
                    self._shas[rel] = known
                    return known
            text = self._text(rel)
            self._shas[rel] = None if text is None else text_sha(text)
            if text is not None and not self._in_memory(rel):
                self._index.record(rel, self._read_stats.get(rel), self._shas[rel])
        return self._shas[rel]

    def _in_memory(self, rel: str) -> bool:
        return rel in self._overlays or rel in self._edits

    # -- summaries and views -------------------------------------------------------------------
    def summary(self, rel: str) -> dict | None:
        if rel not in self._summaries:
            result = None
            if self._sha(rel) is not None:
                result = self._cached_summary(rel)
                if result is None:
                    result = self._summarize(rel, self._text(rel))
                    if result is not None:
                        self._cache_summary(rel, result)
            self._summaries[rel] = result
        return self._summaries[rel]

    def _cached_summary(self, rel: str) -> dict | None:
        """``rel``'s summary from the cache, its absent deferred fields deferred again; None
        when it is not there, the cache is off or ``rel``'s text is in memory (never cached)."""
        if not self.cache.enabled or self._in_memory(rel):
            return None  # (no key made: a digest of the settings and the text, per module)
        cached = self.cache.get("summaries", self._summary_key(rel), partial(checks.valid_summary, rel))
        return deferred.defer_missing(cached, partial(self._deferred, rel, self._sha(rel))) if cached is not None else None

    def _cache_summary(self, rel: str, summary: dict) -> None:
        """Keep ``summary`` of ``rel`` in the cache: the fields computed so far (deferred.computed)."""
        if self.cache.enabled and not self._in_memory(rel):
            self.cache.put("summaries", self._summary_key(rel), deferred.computed(summary))

    def _summary_key(self, rel: str) -> str:
        return digest("summary", SUMMARY_VERSION, rel, self._sha(rel), self.settings)

    def _summary_digest(self, rel: str) -> str | None:
        """A digest of ``rel``'s whole summary (its deferred fields computed: an edit that
        changes only what a function returns changes it too)."""
        if rel not in self._digests:
            summary = self.summary(rel)
            self._digests[rel] = digest(deferred.complete(summary)) if summary is not None else None
        return self._digests[rel]

    def _summarize(self, rel: str, text: str) -> dict | None:
        analysis = analyse(text)
        if analysis is None:
            return None
        summary = summary_of(self._hold(rel, analysis, self._sha(rel)))
        keep_out_of_collections()  # (kept for the component's lint: no collection need walk it)
        return summary

    def _hold(self, rel: str, analysis, sha: str | None):
        """``rel``'s summarizer of ``analysis`` (the text whose hash is ``sha``), kept for the
        deferred fields; the analysis kept for the lint pass too when the budget allows. What
        the summarizers drop to make room is released."""
        self._keep_analysis(rel, analysis)
        summarizer, dropped = self._summarizers.keep(rel, analysis, partial(self._deferred, rel, sha))
        self._release_all(dropped)
        return summarizer

    def _keep_analysis(self, rel: str, analysis) -> None:
        if (rel in self._named or rel in self._edits) and rel not in self.analyses and self._kept + len(analysis.source) <= _KEEP_ANALYSES_BYTES:
            self.analyses[rel] = analysis  # the lint pass reuses the parse and the index
            self._kept += len(analysis.source)

    def _deferred(self, rel: str, sha: str | None, kind: str, key):
        """``field -> value`` for the deferred fields of one record (``kind``, ``key``) of
        ``rel``'s summary of the text whose hash is ``sha`` (project/deferred.py)."""
        return partial(self._deferred_field, rel, sha, kind, key)

    def _deferred_field(self, rel: str, sha: str | None, kind: str, key, field: str):
        from torchsync_lint.project.summary import unknown_field

        summarizer = self._summarizers.get(rel)
        if summarizer is None and sha is not None and self._sha(rel) == sha:  # (another text: its summary is another's)
            analysis = self.analyses.get(rel) or analyse(self._text(rel))
            if analysis is not None:
                summarizer = self._hold(rel, analysis, sha)
        if summarizer is None or sha != self._sha(rel):
            return unknown_field(field, kind)
        return summarizer.deferred_field(kind, key, field)

    # -- freeing parsed modules ---------------------------------------------------------------
    # An analysis is a cycle (its parts refer back to it) holding a whole syntax tree; kept a
    # while, it outlives the young collections, and only a full one would free it. So every
    # analysis the session stops holding is released (ModuleAnalysis.release): reference
    # counting frees it at once, and the next module is built in the memory it leaves.
    def close(self) -> None:
        """Free what the run's lint kept (the parsed modules and their summarizers) now. The
        session stays usable: what it needs again is computed again."""
        self._index.save(self._modules)
        analyses = {id(a): a for a in (*self.analyses.values(), *self._summarizers.analyses())}
        self._forget(everything=True)
        self.analyses, self._kept = {}, 0
        for analysis in analyses.values():
            analysis.release()

    def _release_unheld(self, rel: str, analysis) -> None:
        """Release ``analysis`` (of ``rel``) unless the lint pass keeps it, a lint in progress
        uses it (a summarizer the budget drops meanwhile may hold it too) or a summarizer holds it."""
        if analysis is None or self.analyses.get(rel) is analysis or self._linting.get(rel) is analysis:
            return
        if not self._summarizers.holds(rel, analysis):
            analysis.release()

    def _release_all(self, dropped: list[tuple[str, object]]) -> None:
        """_release_unheld each (rel, analysis) the summarizers no longer hold."""
        for rel, analysis in dropped:
            self._release_unheld(rel, analysis)

    def _take_analysis(self, rel: str):
        """The kept analysis of ``rel`` (None if none), no longer kept: what is kept stays
        under _KEEP_ANALYSES_BYTES however long the session lives (the language server's)."""
        analysis = self.analyses.pop(rel, None)
        if analysis is not None:
            self._kept -= len(analysis.source)
        return analysis

    def prepare(self, jobs: int | None) -> None:
        """(In ``jobs`` processes) the summaries the cache lacks for the scopes of the files
        this session will lint (project/demand.py)."""
        from torchsync_lint.parallel import map_files

        needed = sorted({m for rel in self._named if rel in self.modules() and self.linked(rel) for m in self.scope(rel).modules})
        missing = []
        for rel in needed:
            if rel in self._summaries or self._sha(rel) is None or self._in_memory(rel):
                continue
            if not self.cache.has("summaries", self._summary_key(rel)):  # (a cached one is read when a view needs it: not when the results are cached too)
                missing.append(rel)
        if len(missing) > 1 and jobs != 1:
            work = partial(summarize_file, str(self.root))
            for rel, (sha, result) in zip(missing, map_files(work, missing, jobs)):
                if sha != self._sha(rel):
                    continue  # the worker read another text (saved meanwhile): summary() does ours
                self._summaries[rel] = result
                if result is not None:
                    self._cache_summary(rel, result)
        self._index.save(self.modules())

    def view(self, rel: str) -> ProjectView:
        """The settled view over ``rel``'s scope (project/view.py, project/demand.py): modules
        whose scopes are the same share it."""
        members = self.scope(rel).modules
        if members not in self._views:
            summaries = {m: s for m in members if (s := self.summary(m)) is not None}
            self._views[members] = ProjectView(self.layout, summaries, lambda path: self._outline(path)["lazy"]).settle()
        return self._views[members]

    def env_for(self, rel: str):
        """What the project says to ``rel`` (its component's view), or None."""
        from torchsync_lint.project.env import ModuleEnv

        if not self.linked(rel) or self.summary(rel) is None:
            return None
        return ModuleEnv(self.view(rel), rel)

    def call_lines(self, rel: str, line: int, caller: str) -> list[int]:
        """The lines of module ``caller`` on a call chain to the function that holds ``line``
        of module ``rel`` (project/chains.py)."""
        from torchsync_lint.project.chains import call_lines, enclosing_function

        text = self._text(rel)
        qual = enclosing_function(text, line) if text is not None else None
        return call_lines(self.view(rel), rel, qual, caller) if qual is not None and self.linked(rel) else []

    # -- linting ----------------------------------------------------------------------------------
    def lint(self, path: str, *, text: str | bytes | None = None, report_as: str | None = None, codes: set[str] | None = None, noqa: bool = True) -> FileResult:
        shown = report_as or path
        rel = self._rel(path)
        if text is not None and rel is not None and (rel in self.modules() or (self.marked and rel.endswith(MODULE_SUFFIXES))):
            if _lines(text) != _lines(self._overlays[rel] if rel in self._overlays else self._disk_text(rel)):
                self.set_source(path, text)  # (flake8's lines have universal newlines: same positions)
            text = None
        in_view = rel is not None and rel in self.modules()
        try:
            source = self._source(rel) if in_view else None
            if source is None:  # not in the view, or unreadable: read again, for the ReadError to report
                source = sources.read(path, self._overlays.get(rel, text) if rel is not None else text, report_as=shown)
        except ReadError as exc:
            return FileResult(shown, errors=[file_error(shown, exc.code, exc.message)])
        if source.python is None:
            return FileResult(shown, source=source.file)
        codes = self._codes(shown) if codes is None else codes
        rel = rel if in_view else None
        key = self._result_key(shown, rel, source.python, codes, noqa)
        findings = checks.cached_findings(self.cache, key) if key is not None else None
        if findings is None:
            findings = [source.to_file(f) for f in self._lint_module(source.python, shown, rel, codes, noqa)]
            if key is not None and not (rel is not None and self._in_memory(rel)):
                self.cache.put("results", key, [f.to_dict() for f in findings])
        return FileResult.of(shown, findings, source.file, file_errors=lambda errors: source.file_errors(errors, shown))

    def _rel(self, path: str) -> str | None:
        return self.layout.relpath(path) if path != "-" and self.layout.contains(path) else None

    def _disk_text(self, rel: str) -> str | None:
        source = self._source(rel) if rel not in self._overlays else None
        return source.file.text if source is not None else None

    def _codes(self, shown: str) -> set[str]:
        from torchsync_lint.catalog import rule_table

        return self.config.codes_for_path(shown, rule_table())

    def _lint_module(self, text: str, shown: str, rel: str | None, codes: set[str], noqa: bool) -> list[Finding]:
        from torchsync_lint.engine import lint_source  # here: a run served by the cache never loads libcst

        env = self.env_for(rel) if rel is not None else None
        prepared = self._take_analysis(rel) if rel is not None else None
        if prepared is not None:
            self._linting[rel] = prepared
        try:
            return lint_source(text, shown, codes, self.settings, env=env, prepared=prepared, noqa=noqa)
        finally:
            if prepared is not None:
                del self._linting[rel]
                self._release_unheld(rel, prepared)

    def _result_key(self, shown: str, rel: str | None, text: str, codes: set[str], noqa: bool) -> str | None:
        if not self.cache.enabled:
            return None
        from torchsync_lint.installed import installed_torchmetrics_version

        sha = text_sha(text)
        deps = self.dependencies(rel) if rel is not None else ""
        return digest("results", shown, sha, sorted(codes), sorted(self.settings.items()), installed_torchmetrics_version(), noqa, deps)

    @contextmanager
    def editing(self, path: str, *, report_as: str | None = None, codes: set[str] | None = None, noqa: bool = True) -> Iterator[Callable[[str], list[Finding]]]:
        shown = report_as or path
        rel = self._rel(path)
        rel = rel if rel is not None and rel in self.modules() else None
        codes = self._codes(shown) if codes is None else codes

        def lint(text: str) -> list[Finding]:
            if rel is not None:
                self._edit(rel, text)
            return self._lint_module(text, shown, rel, codes, noqa)

        try:
            yield lint
        finally:
            if rel is not None:
                self._edit(rel, None)

    # -- in-memory sources ------------------------------------------------------------------------
    def set_source(self, path: str, text: str | bytes) -> set[str]:
        rel = self.layout.relpath(path)
        self._overlays[rel] = text
        if rel not in self._named:  # a buffer is there to be linted: keep its parse for that
            self._named = sorted({*self._named, rel})
        return self._changed(rel)

    def clear_source(self, path: str) -> set[str]:
        rel = self.layout.relpath(path)
        if self._overlays.pop(rel, None) is None:
            return set()
        return self._changed(rel)

    def refresh(self) -> set[str]:
        before = self._snapshot()
        self._forget(everything=True)
        after = self._snapshot()
        changed = {m for m in set(before[0]) | set(after[0]) if before[0].get(m) != after[0].get(m)}
        return self._affected(before, after, changed, structural=bool(changed))

    def _edit(self, rel: str, text: str | None) -> None:
        """A fix round's version of ``rel``'s module (None: back to its source)."""
        if text is None:
            if self._edits.pop(rel, None) is not None:
                self._changed(rel)
        elif self._text(rel) != text:
            self._edits[rel] = text
            self._changed(rel)

    def _changed(self, rel: str) -> set[str]:
        before = self._snapshot()
        old = self._summary_digest(rel) if self.connected(rel) else None
        self._forget(rel=rel)
        after = self._snapshot()
        new = self._summary_digest(rel) if self.connected(rel) else None
        return self._affected(before, after, {rel}, structural=old != new or before[1] != after[1] or set(before[0]) != set(after[0]))

    def _snapshot(self) -> tuple:
        """(text digest per module, reach edges, component per module, connected modules)."""
        self._read_all_rows()
        graph = self.graph()
        return {m: self._sha(m) for m in self.modules()}, graph["reach"], dict(self._top), set(self._connected)

    def _affected(self, before: tuple, after: tuple, changed: set[str], structural: bool) -> set[str]:
        """The files whose results may differ after ``changed`` modules changed: themselves,
        and when a summary, an import edge or the set of files changed, the connected modules
        of their components before and after."""
        out = set(changed)
        if structural:
            for _, _, top, connected in (before, after):
                tops = {top[m] for m in changed if m in top}
                out.update(m for m, t in top.items() if t in tops and m in connected)
        return out

    def __getstate__(self) -> dict:
        """What a worker process needs: the graph, the summaries, the overlays and the cache;
        not the sources, the parsed modules or the views (rebuilt there)."""
        state = dict(self.__dict__)
        state.update(_sources={}, _shas={}, analyses={}, _kept=0, _linting={}, _views={}, _demand=None, _summarizers=Summarizers(_KEEP_ANALYSES_BYTES))
        return state


def _lines(text: str | bytes | None) -> str | bytes | None:
    """``text`` with its line ends as universal newlines (positions are the same)."""
    if isinstance(text, str):
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text
