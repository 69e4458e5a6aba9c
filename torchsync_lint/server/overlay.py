"""The project Session of `check`, reading open editor buffers instead of the files on disk.

This is the one seam between the language server and the pipeline: a subclass of
project/session.py's Session whose sources, import lists and summaries come from the buffers
the editor holds (saved or not) where it holds one, and from the files (through the same
on-disk cache) everywhere else. Summaries and import lists also stay in a memory layer that
outlives one lint, so a keystroke re-summarises only the edited buffer.

Buffers are never written to the on-disk cache: their summaries are keyed by content like any
other, but a cache entry per debounced keystroke would only fill `.torchsync_cache/`.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from pathlib import Path

from torchsync_lint.project.cache import Cache, digest
from torchsync_lint.project.session import Session, import_names

_MEMORY_ENTRIES = 4096  # summaries, import lists and graphs: a few KB each


class Memory:
    """An LRU of cache entries (kind, key) -> value, kept for the server's lifetime."""

    def __init__(self, capacity: int = _MEMORY_ENTRIES) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, str], object] = OrderedDict()

    def get(self, kind: str, key: str):
        found = self._entries.get((kind, key))
        if found is not None:
            self._entries.move_to_end((kind, key))
        return found

    def put(self, kind: str, key: str, value) -> None:
        self._entries[(kind, key)] = value
        self._entries.move_to_end((kind, key))
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class LayeredCache(Cache):
    """The memory layer in front of a project's on-disk cache (same interface as Cache)."""

    def __init__(self, disk: Cache, memory: Memory) -> None:
        self.disk, self.memory = disk, memory
        self.enabled = disk.enabled
        self.dir = disk.dir

    def get(self, kind: str, key: str):
        found = self.memory.get(kind, key)
        if found is None:
            found = self.disk.get(kind, key)
            if found is not None:
                self.memory.put(kind, key, found)
        return found

    def put(self, kind: str, key: str, value) -> None:
        self.memory.put(kind, key, value)
        self.disk.put(kind, key, value)


class BufferSession(Session):
    """A Session in which ``buffers`` (absolute path -> text) replace the files on disk."""

    def __init__(self, root: Path, files: list[str], *, buffers: dict[str, str], memory: Memory, **kwargs) -> None:
        super().__init__(root, files, **kwargs)
        self.memory = memory
        self.cache = LayeredCache(self.cache, memory)
        self.buffers: dict[str, str] = {}
        for path, text in buffers.items():
            if self.layout.contains(path):
                self.buffers[self.layout.relpath(path)] = text

    def source(self, rel: str) -> tuple[str, str] | None:
        text = self.buffers.get(rel)
        if text is None:
            return self._disk_source(rel)
        if rel not in self._sources:
            self._sources[rel] = (text, _sha(text))
        return self._sources[rel]

    def _disk_source(self, rel: str) -> tuple[str, str] | None:
        """A file's text and hash, kept in memory while its size and mtime stay the same (a
        lint reads the neighbourhood's hashes to key their summaries)."""
        if rel in self._sources:
            return self._sources[rel]
        stamp = self._stamp(rel)
        key = digest("source", *stamp)
        found = self.memory.get("source", key) if stamp[1] is not None else None
        if found is None:
            found = super().source(rel)
            if found is None:
                return None
            self.memory.put("source", key, found)
        self._sources[rel] = tuple(found)
        return self._sources[rel]

    def graph(self) -> dict[str, set[str]]:
        """The import graph of the files on disk, with each buffer's own imports in place of
        its file's (and buffers of files not saved yet added)."""
        if self._graph is not None:
            return self._graph
        graph = super().graph()
        for rel, text in sorted(self.buffers.items()):
            if not rel.endswith(".py"):
                continue
            old = graph.get(rel, set())
            new = self._buffer_imports(rel, text)
            if new == old and rel in graph:
                continue
            for target in old - new:
                self._reverse.get(target, set()).discard(rel)
            for target in new - old:
                self._reverse.setdefault(target, set()).add(rel)
            graph[rel] = new
        return graph

    def _imports_of(self, rel: str) -> set[str]:
        """A file's own imports, never its buffer's: Session caches them (and the graph made of
        them) on disk under the file's size and mtime, where `check` reads them back."""
        if rel not in self.buffers:
            return super()._imports_of(rel)
        buffer = self.buffers.pop(rel)
        self._sources.pop(rel, None)
        try:
            return super()._imports_of(rel)
        finally:
            self.buffers[rel] = buffer
            self._sources.pop(rel, None)  # the buffer is the source from here on

    def _buffer_imports(self, rel: str, text: str) -> set[str]:
        key = digest("buffer-imports", rel, _sha(text), self._files_digest)
        cached = self.memory.get("imports", key)
        if cached is not None:
            return set(cached)
        out = set()
        for name in import_names(text):
            found = self.layout.resolve(name, self.layout.root / rel)
            if found is not None:
                target = self.layout.relpath(found[0])
                if target != rel:
                    out.add(target)
        self.memory.put("imports", key, sorted(out))
        return out

    def summary(self, rel: str) -> dict | None:
        """As Session.summary, but a buffer's summary goes to memory only."""
        if rel not in self.buffers or rel in self._summaries:
            return super().summary(rel)
        text, sha = self.source(rel)
        key = self._summary_key(rel, sha)
        result = self.memory.get("summaries", key)
        if result is None:
            result = self._summarize(rel, text)
            if result is not None:
                self.memory.put("summaries", key, result)
        self._store(rel, result)
        return result

    def prepare(self, jobs: int | None = 1) -> None:
        """Summaries from memory, the on-disk cache or the parser, in this process (the
        server keeps one worker thread; a pool per keystroke would cost more than it saves)."""
        for rel in self.needed():
            self.summary(rel)
        self.view()

    def summary_digest(self, rel: str) -> str:
        """What this module tells the others (its summary's digest; "" when it has none)."""
        return self._digests.get(rel, "") if rel in self._summaries else ""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_python_path(path: str) -> bool:
    return os.path.splitext(path)[1] in (".py", ".pyi")
