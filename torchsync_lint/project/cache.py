"""An on-disk cache of per-file results under `<project root>/.torchsync_cache/`.

Entries are named by a hash of everything they depend on (see project/session.py for what
each kind's key holds) and written atomically (atomic.py: a temp file, then a rename) so that
concurrent runs and worker processes never read half an entry, and a full disk leaves no
partial file behind (a write that fails turns that Cache object off: one session's cache, in
one process, for the rest of its life). The directory gets its own `.gitignore` (`*`) and a
CACHEDIR.TAG, as ruff's does.

An entry is trusted only when it is exactly what this tool wrote under that key: its first
line names the key and the SHA-256 of the rest, and the rest must pass the reader's shape
check. Anything else (not JSON, the wrong shape, another key's entry, a truncated write) is a
miss, and the recomputed value replaces it. Entries are opened without blocking or following
a link and read only when they are regular files (a FIFO under an entry's name would otherwise
hang the run); anything else but a directory under an entry's name (a FIFO, a socket, a
link) is removed before the entry is written, and a directory leaves that entry a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from torchsync_lint import __version__
from torchsync_lint.atomic import WriteError, write_atomic
from torchsync_lint.files import CACHE_DIR, read_regular
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchsync-lint.\n"
_HEADER = b"tsl-cache 1 "
_MAX_ENTRY_BYTES = 64 << 20


_CODE: str | None = None


def code_fingerprint() -> str:
    """The code that computes every entry: the tool's version, the size and mtime of each of
    its source files (an editable install changes code without changing the version), the
    Python minor version (import names come from its parser: a module using 3.12-only syntax
    imports nothing under 3.11) and the libcst release (summaries and findings come from its
    parse)."""
    global _CODE
    if _CODE is None:
        from torchsync_lint.installed import installed_version

        package = Path(__file__).resolve().parent.parent
        stats = []
        for directory, _, names in sorted(os.walk(package)):
            for name in sorted(names):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(directory, name))
                    stats.append((os.path.relpath(os.path.join(directory, name), package), st.st_size, st.st_mtime_ns))
        runtime = [list(sys.version_info[:2]), installed_version("libcst")]
        _CODE = hashlib.sha256(json.dumps([__version__, stats, runtime]).encode()).hexdigest()
    return _CODE


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in (code_fingerprint(), *parts):
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


class Cache:
    def __init__(self, root: Path | None, enabled: bool = True, base: str | None = None) -> None:
        """``base``: `--cache-dir`, shared by every project of a run, each in a directory
        named by a hash of its root; None: `<root>/.torchsync_cache`."""
        self.enabled = enabled and root is not None
        self.dir = None
        if root is not None:
            top = Path(base) / hashlib.sha256(os.fsencode(os.path.abspath(root))).hexdigest()[:16] if base else root / CACHE_DIR
            self.dir = top / f"v{__version__}"
        self._ready = False

    def _path(self, kind: str, key: str) -> Path:
        return self.dir / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str, valid: Callable[[object], bool] | None = None):
        """The value stored under ``key``, or None: a missing, foreign, damaged or
        ill-shaped entry (``valid(value)`` false) is a miss."""
        if not self.enabled:
            return None
        data = _read_entry(self._path(kind, key))
        if data is None or not data.startswith(_HEADER):
            return None
        header, _, body = data.partition(b"\n")
        fields = header[len(_HEADER) :].split(b" ")
        if len(fields) != 2 or fields[0] != key.encode() or fields[1] != hashlib.sha256(body).hexdigest().encode():
            return None
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if valid is not None:
            try:
                if not valid(value):
                    return None
            except (TypeError, KeyError, AttributeError, ValueError):
                return None
        return value

    def has(self, kind: str, key: str) -> bool:
        """Is there an entry under ``key`` (not read: ``get`` may still find it damaged)?"""
        return self.enabled and os.path.isfile(self._path(kind, key))

    def put(self, kind: str, key: str, value) -> None:
        if not self.enabled:
            return
        try:
            body = json.dumps(value, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError):
            return
        data = _HEADER + key.encode() + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        try:
            self._prepare()
            folder = self.dir / kind / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{key}.json"
            if not _make_room(path):
                return  # a directory under an entry's name: that one entry stays a miss
            write_atomic(str(path), data, durable=False)
        except (OSError, WriteError):
            self.enabled = False  # a read-only checkout, a full disk: run without a cache

    def _prepare(self) -> None:
        if self._ready:
            return
        top = self.dir.parent
        top.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", "# Created by torchsync-lint.\n*\n"), ("CACHEDIR.TAG", _TAG)):
            path = top / name
            if not path.exists():
                write_atomic(str(path), text.encode("utf-8"), durable=False)
        self._ready = True


def _make_room(path: Path) -> bool:
    """Remove what is not a regular file under an entry's name (a FIFO, a socket, a symlink,
    which would be written through), so that the entry can be written; False for a directory."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return True
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass  # another thread or process removed it first: the room is made all the same
    return True


def _read_entry(path: Path) -> bytes | None:
    """The bytes of the entry at ``path`` when it is a regular file (not a link) of a size an
    entry can have, else None (files.read_regular: opened without blocking)."""
    try:
        return read_regular(path, _MAX_ENTRY_BYTES, follow=False)[0]
    except OSError:
        return None
