"""What a run knows of each module of a project without reading it again: the hash of its
text, keyed by the file's size, inode, modification and status-change times when it was read
(as git's index does). A warm run stats the project's files instead of reading them: a one-file run
in a repository of a thousand modules otherwise reads and hashes every one of them to find
its cached scope, summaries and result.

An entry is trusted only while the file's stat is what it was when it was read; the stat is
taken before the read, so a file saved meanwhile is read again next time. The status-change
time is what makes an edit seen whatever the file's timestamps: a tool can put back the size
and the modification time (`touch -r`, an editor keeping them), but every write and every
`utime` moves the ctime to the clock's now. A file changed within the last ``_RACY_NS`` of its
read is not recorded (its next save could fall within the timestamps' resolution). The index is one cache entry per project
(project/cache.py: checked, written atomically), rewritten only when it changed.
"""

from __future__ import annotations

import os
import time

from torchsync_lint.project.cache import Cache, digest

INDEX_VERSION = 2
_RACY_NS = 2_000_000_000


Stat = tuple[int, int, int, int]


def file_stat(path: str) -> Stat | None:
    """(size, inode, mtime, ctime in ns) of ``path``, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def _valid(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, list) and len(v) == 5 and all(isinstance(n, int) for n in v[:4]) and isinstance(v[4], str) for k, v in value.items()
    )


class FileIndex:
    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self._key = digest("file-index", INDEX_VERSION)  # (one per project: the cache directory is the project's)
        self._entries: dict[str, list] | None = None
        self._changed = False

    def _loaded(self) -> dict[str, list]:
        if self._entries is None:
            stored = self._cache.get("index", self._key, _valid) if self._cache.enabled else None
            self._entries = stored or {}
        return self._entries

    def sha(self, rel: str, stat: Stat | None) -> str | None:
        """The recorded hash of ``rel``'s text, when its file still has ``stat``."""
        if stat is None or not self._cache.enabled:
            return None
        entry = self._loaded().get(rel)
        return entry[4] if entry is not None and tuple(entry[:4]) == stat else None

    def record(self, rel: str, stat: Stat | None, sha: str) -> None:
        """``rel``'s text, read when its file had ``stat``, has hash ``sha``."""
        if stat is None or not self._cache.enabled or max(stat[2], stat[3]) > time.time_ns() - _RACY_NS:
            return
        entries = self._loaded()
        if entries.get(rel) != [*stat, sha]:
            entries[rel] = [*stat, sha]
            self._changed = True

    def save(self, modules: list[str] | None = None) -> None:
        """Write the index when it changed (keeping only ``modules``' entries, when given:
        a deleted file's entry goes)."""
        if not self._changed or self._entries is None:
            return
        if modules is not None:
            kept = set(modules)
            self._entries = {k: v for k, v in self._entries.items() if k in kept}
        self._cache.put("index", self._key, self._entries)
        self._changed = False
