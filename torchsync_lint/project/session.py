"""One run's project view: which modules the linted files are connected to, their summaries
(from the cache when the file has not changed, else computed), and the view over them.

A module's neighbours come from its import statements (read with Python's own `ast`, about
twenty times faster than libcst, and cached by content): the modules it imports, those that
import it, and what those import in turn. Linting one file of a large project reads only the
summaries of its neighbourhood, and parses only the modules whose summary is not cached.
"""

from __future__ import annotations

import ast
import hashlib
import os
from functools import partial
from pathlib import Path

from torchsync_lint.project.cache import Cache, digest
from torchsync_lint.project.layout import Layout, find_root
from torchsync_lint.project.view import SUMMARY_VERSION, ProjectView

# Past this many modules around a file, only its imports and direct importers are read.
_NEIGHBOURHOOD_CAP = 400
_KEEP_ANALYSES_BYTES = 8 << 20  # parsed modules kept for the lint pass (avoids parsing twice)


def import_names(source: str) -> list[str]:
    """The dotted names a module's import statements name (relative ones keep their dots);
    `from a import b` names both `a` and `a.b` (b may be a submodule)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names.append(base)
            sep = "" if base.endswith(".") or not base else "."
            names += [f"{base}{sep}{alias.name}" for alias in node.names if alias.name != "*"]
    return names


# Where statements nest: imports are statements, so expressions are never walked (a module's
# expressions are most of its nodes).
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.stmt]):
    """Every statement under ``body``, at any depth (functions, classes, blocks)."""
    stack = [body]
    while stack:
        for node in stack.pop():
            yield node
            for field in _BODIES:
                inner = getattr(node, field, None)
                if inner:
                    stack.append(inner)


class Session:
    def __init__(self, root: Path, files: list[str], *, marked: bool = True, use_cache: bool = True, config_digest: str = "", walk=None) -> None:
        """``marked``: a project marker (pyproject.toml, .git...) defines ``root``; without one
        only ``files`` and what they import are read, and no cache is written. ``walk``: lists
        the project's Python files (the run's own discovery, so excludes and .gitignore apply)."""
        self.layout = Layout(root)
        self.marked = marked
        self.walk = walk
        self.cache = Cache(self.layout.root, use_cache and marked)
        self.config_digest = config_digest
        self.files = {self.layout.relpath(f): f for f in files if self.layout.contains(f)}
        self._sources: dict[str, tuple[str, str]] = {}  # relpath -> (text, sha)
        self._graph: dict[str, set[str]] | None = None
        self._files_digest = ""
        self._reverse: dict[str, set[str]] = {}
        self._summaries: dict[str, dict] = {}
        self._digests: dict[str, str] = {}
        self.analyses: dict[str, object] = {}  # relpath -> env-free ModuleAnalysis, for reuse
        self._kept = 0
        self._view: ProjectView | None = None

    @classmethod
    def for_paths(cls, paths: list[str], files: list[str], **kwargs) -> Session:
        root, marked = find_root(paths)
        return cls(root, files, marked=marked, **kwargs)

    # -- sources and the import graph -----------------------------------------------------------
    def source(self, rel: str) -> tuple[str, str] | None:
        if rel not in self._sources:
            try:
                from torchsync_lint.files import ReadError, read_source

                text = read_source(str(self.layout.root / rel)).text
            except (ReadError, OSError):
                return None
            self._sources[rel] = (text, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        return self._sources[rel]

    def graph(self) -> dict[str, set[str]]:
        """Project module -> the project modules it imports."""
        if self._graph is None:
            files = self._project_files()
            # Which module an import name resolves to depends on the set of project files: a
            # file added or removed re-resolves every file's imports, an edit only its own.
            self._files_digest = digest("files", [str(r) for r in self.layout.roots], files)
            # A warm run over an unchanged tree reads the whole graph in one go: keyed by every
            # project file's size and mtime.
            key = digest("graph", self._files_digest, [self._stamp(rel) for rel in files])
            cached = self.cache.get("graph", key)
            if isinstance(cached, dict):
                self._graph = {rel: set(targets) for rel, targets in cached.items()}
            else:
                self._graph = {rel: self._imports_of(rel) for rel in files}
                self.cache.put("graph", key, {rel: sorted(targets) for rel, targets in self._graph.items()})
            for rel, targets in self._graph.items():
                for target in targets:
                    self._reverse.setdefault(target, set()).add(rel)
        return self._graph

    def _project_files(self) -> list[str]:
        if not self.marked or self.walk is None:
            return sorted(self.files)
        return sorted({self.layout.relpath(f) for f in self.walk(str(self.layout.root)) if f.endswith(".py")})

    def _stamp(self, rel: str) -> tuple:
        try:
            st = os.stat(self.layout.root / rel)
        except OSError:
            return (rel, None, None)
        return (rel, st.st_size, st.st_mtime_ns)

    def _imports_of(self, rel: str) -> set[str]:
        # Keyed by size and mtime, so that a warm run reads no file just to learn its imports.
        try:
            st = os.stat(self.layout.root / rel)
        except OSError:
            return set()
        key = digest("imports", rel, st.st_size, st.st_mtime_ns, self._files_digest)
        cached = self.cache.get("imports", key)
        if isinstance(cached, list):
            return set(cached)
        loaded = self.source(rel)
        out = set()
        for name in import_names(loaded[0]) if loaded is not None else []:
            found = self.layout.resolve(name, self.layout.root / rel)
            if found is not None:
                target = self.layout.relpath(found[0])
                if target != rel:
                    out.add(target)
        self.cache.put("imports", key, sorted(out))
        return out

    def neighbourhood(self, rel: str) -> set[str]:
        """The modules whose summaries linting ``rel`` may consult: what it imports, what
        imports it, and what those import (transitively, up to a cap)."""
        graph = self.graph()
        up = _closure({rel}, lambda m: self._reverse.get(m, ()), _NEIGHBOURHOOD_CAP)
        down = _closure(up, lambda m: graph.get(m, ()), _NEIGHBOURHOOD_CAP)
        if len(down) > _NEIGHBOURHOOD_CAP:  # a huge library: imports and direct importers only
            down = _closure({rel} | set(self._reverse.get(rel, ())), lambda m: graph.get(m, ()), _NEIGHBOURHOOD_CAP)
        return down

    def connected(self, rel: str) -> bool:
        graph = self.graph()
        return bool(graph.get(rel)) or bool(self._reverse.get(rel))

    # -- summaries ------------------------------------------------------------------------------
    def summary(self, rel: str) -> dict | None:
        if rel in self._summaries:
            return self._summaries[rel]
        loaded = self.source(rel)
        result = None
        if loaded is not None:
            key = self._summary_key(rel, loaded[1])
            result = self.cache.get("summaries", key)
            if result is None:
                result = self._summarize(rel, loaded[0])
                if result is not None:
                    self.cache.put("summaries", key, result)
        self._store(rel, result)
        return result

    def _summarize(self, rel: str, text: str) -> dict | None:
        result, analysis = _analyse_and_summarize(rel, text)
        if analysis is not None and rel in self.files and self._kept + len(text) <= _KEEP_ANALYSES_BYTES:
            self.analyses[rel] = analysis  # the lint pass reuses the parse and the index
            self._kept += len(text)
        return result

    def needed(self) -> list[str]:
        """Every module the linted files' neighbourhoods hold."""
        found: set[str] = set()
        for rel in sorted(self.files):
            if self.connected(rel):
                found |= self.neighbourhood(rel)
        return sorted(found)

    def prepare(self, jobs: int | None) -> None:
        """Compute the summaries the cache does not have, in ``jobs`` processes, then the view."""
        from torchsync_lint.parallel import map_files

        missing = []
        for rel in self.needed():
            loaded = self.source(rel)
            if loaded is None:
                self._summaries[rel] = None
                continue
            cached = self.cache.get("summaries", self._summary_key(rel, loaded[1]))
            if cached is not None:
                self._store(rel, cached)
            else:
                missing.append(rel)
        if len(missing) > 1 and jobs != 1:
            work = partial(_summarize_file, str(self.layout.root))
            for rel, result in zip(missing, map_files(work, missing, jobs)):
                self._store(rel, result)
                if result is not None:
                    self.cache.put("summaries", self._summary_key(rel, self._sources[rel][1]), result)
        self.view()

    def _summary_key(self, rel: str, sha: str) -> str:
        return digest("summary", SUMMARY_VERSION, rel, sha, self.config_digest)

    def _store(self, rel: str, result: dict | None) -> None:
        self._summaries[rel] = result
        if result is not None:
            self._digests[rel] = digest(result)

    def view(self) -> ProjectView:
        """The view over every module connected to the linted files."""
        if self._view is None:
            summaries = {rel: s for rel in self.needed() if (s := self.summary(rel)) is not None}
            self._view = ProjectView(self.layout, summaries)
        return self._view

    def __getstate__(self) -> dict:
        """What a worker process needs: the graph, the summaries and the cache; not the
        sources, the parsed modules or the view's memos (rebuilt there)."""
        state = dict(self.__dict__)
        state.update(_sources={}, analyses={}, _kept=0, _view=None, walk=None)
        return state

    def dependencies(self, rel: str) -> str:
        """A digest of the summaries linting ``rel`` consults: its cached result is valid while
        this is unchanged."""
        if not self.connected(rel):
            return ""
        view = self.view()
        return digest(sorted((m, self._digests.get(m, "")) for m in self.neighbourhood(rel) if m in view.summaries and m != rel))

    def env_for(self, path: str):
        from torchsync_lint.project.env import ModuleEnv

        rel = self.layout.relpath(path) if self.layout.contains(path) else None
        if rel is None or not self.connected(rel) or rel not in self.view().summaries:
            return None
        return ModuleEnv(self.view(), rel)


def _closure(start: set[str], neighbours, cap: int) -> set[str]:
    seen = set(start)
    todo = sorted(start)
    while todo and len(seen) <= cap:
        current = todo.pop()
        for nxt in sorted(neighbours(current)):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _analyse_and_summarize(rel: str, text: str):
    """(summary, analysis) of one module, or (None, None) when it cannot be summarised."""
    import libcst as cst  # here: a run served by the cache never loads the parser

    from torchsync_lint.analysis import ModuleAnalysis
    from torchsync_lint.project import summary as summary_module

    try:
        analysis = ModuleAnalysis(cst.parse_module(text), text)
        return summary_module.summarize(analysis, rel), analysis
    except Exception:  # noqa: BLE001 - a module we cannot summarise is unknown, never a crash
        return None, None


def _summarize_file(root: str, rel: str) -> dict | None:
    """A worker's summary of one module (parsed there, nothing kept): just the file, not a
    whole Session (whose layout would re-read pyproject.toml for every module)."""
    from torchsync_lint.files import ReadError, read_source

    try:
        text = read_source(os.path.join(root, rel)).text
    except (ReadError, OSError):
        return None
    return _analyse_and_summarize(rel, text)[0]
