"""The import graph part of a project Session (project/session.py): the graph of the project's
modules (project/graph.py) through the cache, read only as far as the files to lint need
(graph.rows_needed), its connected components, and the digest a cached result depends on.
A mixin: it reads the Session's files, texts, cache and layout."""

from __future__ import annotations

from functools import partial

from torchsync_lint.project import checks
from torchsync_lint.project.cache import digest
from torchsync_lint.project.graph import components, import_hints, import_names, resolve_imports, rows_needed
from torchsync_lint.project.view import SUMMARY_VERSION

_GRAPH_VERSION = 1


class ImportGraph:
    def graph(self) -> dict:
        """{"imports": module -> modules it imports, "reach": imports plus the modules inside
        the packages it imports} over every module of the project (project/graph.py)."""
        if self._graph is None or self._dirty:
            files = self.modules()
            if self._graph is not None:  # an in-memory edit: redo the edited modules' rows
                graph = {part: dict(rows) for part, rows in self._graph.items()}
                self._resolve_rows(graph, sorted(self._dirty | self._unread))
                self._unread = set()
            else:
                shas = [(m, self._sha(m)) for m in files]
                self._graph_key = digest("graph", _GRAPH_VERSION, self._roots(), shas)
                memory = any(self._in_memory(m) for m in files)
                graph = None if memory else self.cache.get("graph", self._graph_key, partial(checks.valid_graph, files))
                if graph is None:
                    graph = {"imports": {}, "reach": {}}
                    self._resolve_rows(graph, self._rows_to_read(graph, files))
                    self._unread = {m for m in files if m not in graph["imports"]}
                    for m in self._unread:  # (read when a question needs them: _read_all_rows)
                        graph["imports"][m] = graph["reach"][m] = []
                    if not memory and not self._unread:
                        self.cache.put("graph", self._graph_key, graph)
            self._graph, self._dirty = graph, set()
            self._connected = {m for m, targets in graph["imports"].items() if targets} | {t for targets in graph["imports"].values() for t in targets}
            top = components(graph["reach"])
            self._members: dict[str, list[str]] = {}
            for m in files:
                self._members.setdefault(top[m], []).append(m)
            self._top = top
        return self._graph

    def _resolve_rows(self, graph: dict, modules) -> None:
        packages: dict[str, list[str]] = {}
        for m in modules:
            if m not in graph["imports"] or m in self._dirty or m in self._unread:
                if self._names_no_module(m):
                    graph["imports"][m] = graph["reach"][m] = []
                    continue
                direct, inside = resolve_imports(self.layout, m, self._import_names(m), packages)
                graph["imports"][m], graph["reach"][m] = direct, direct + inside

    def _names_no_module(self, rel: str) -> bool:
        """Can no import statement of ``rel`` name a project module? True when none can be
        relative and no word that may be part of one is a directory or module name of the
        project (graph.import_hints, a superset): its row is empty, and Python need not parse
        it (most of a project's modules import only libraries)."""
        if rel in self._names:
            return False  # (read already: resolving it costs little)
        text = self._text(rel)
        if text is None:
            return False
        words, relative = import_hints(text)
        return not relative and words.isdisjoint(self.layout.path_names)

    def _rows_to_read(self, graph: dict, files: list[str]) -> list[str]:
        """All the modules, or for a run over some of them (the files named), only those whose
        rows decide their components (graph.rows_needed); their rows are read into ``graph``."""
        known = set(files)
        named = [m for m in self._named if m in known]
        if not named or len(named) == len(files):
            return files

        def reach_of(m: str) -> list[str]:
            self._resolve_rows(graph, [m])
            return graph["reach"][m]

        return sorted(rows_needed(files, named, self._text, reach_of))

    def _read_all_rows(self) -> None:
        """Every module's import row (a question about a module the run did not name)."""
        self.graph()
        if self._unread:
            self._dirty = set(self._unread)
            graph = self.graph()
            if not any(self._in_memory(m) for m in self.modules()):
                self.cache.put("graph", self._graph_key, graph)

    def _roots(self) -> list[str]:
        return [self.layout.relpath(r) for r in self.layout.roots]

    def _import_names(self, rel: str) -> list[str]:
        if rel not in self._names:
            sha = self._sha(rel)
            stored = sha is not None and self.cache.enabled and not self._in_memory(rel)
            key = digest("imports", sha) if stored else None
            cached = self.cache.get("imports", key, checks.valid_names) if stored else None
            if cached is None:
                cached = import_names(self._text(rel)) if sha is not None else []
                if stored:
                    self.cache.put("imports", key, cached)
            self._names[rel] = cached
        return self._names[rel]

    def connected(self, rel: str) -> bool:
        """Is ``rel`` connected to another module by imports (else it is linted alone)?"""
        self._graph_of(rel)
        return rel in self._connected

    def component(self, rel: str) -> list[str]:
        """The modules of ``rel``'s connected component (sorted), ``rel`` included."""
        self._graph_of(rel)
        return self._members.get(self._top.get(rel, ""), [rel])

    def _graph_of(self, rel: str) -> None:
        """The import graph, with every row that ``rel``'s component depends on read."""
        self.graph()
        if rel in self._unread:
            self._read_all_rows()

    def dependencies(self, rel: str) -> str:
        """A digest of everything the project view can tell ``rel``: its cached result is valid
        while this is unchanged ("" for a module linted alone). Every summary is a function of
        its module's text, the settings and this code, so the texts' hashes stand for them
        (no summary need be computed to know a cached result still holds)."""
        if not self.connected(rel):
            return ""
        top = self._top[rel]
        if top not in self._deps:
            members = self._members[top]
            reach = self.graph()["reach"]
            self._deps[top] = digest("component", SUMMARY_VERSION, self._roots(), self.settings, [(m, self._sha(m), reach[m]) for m in members])
        return self._deps[top]

    def dependents(self, path: str) -> set[str]:
        rel = self.layout.relpath(path)
        if not self.connected(rel):
            return {rel}
        return {m for m in self.component(rel) if m in self._connected}
