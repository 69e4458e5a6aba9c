"""An on-disk cache of per-file results under `<project root>/.torchsync_cache/`.

Entries are JSON files named by a hash of everything they depend on (the file's content, the
tool version, the settings that matter; for lint results, the summaries of the modules the file
was linted against), written atomically (atomic.py: a temp file, then a rename) so that
concurrent runs and worker processes never read half an entry, and a full disk leaves no
partial file behind; an entry that does not parse is a miss. A write that fails turns the
cache off for the rest of the run. The directory gets its own `.gitignore` (`*`) and a
CACHEDIR.TAG, as ruff's does.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from torchsync_lint import __version__
from torchsync_lint.atomic import WriteError, write_atomic

CACHE_DIR = ".torchsync_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by torchsync-lint.\n"


_CODE: str | None = None


def code_fingerprint() -> str:
    """The tool's own code: its version, and the size and mtime of each of its source files
    (an editable install changes code without changing the version)."""
    global _CODE
    if _CODE is None:
        package = Path(__file__).resolve().parent.parent
        stats = []
        for directory, _, names in sorted(os.walk(package)):
            for name in sorted(names):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(directory, name))
                    stats.append((os.path.relpath(os.path.join(directory, name), package), st.st_size, st.st_mtime_ns))
        _CODE = hashlib.sha256(json.dumps([__version__, stats]).encode()).hexdigest()
    return _CODE


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in (code_fingerprint(), *parts):
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


class Cache:
    def __init__(self, root: Path | None, enabled: bool = True) -> None:
        self.enabled = enabled and root is not None
        self.dir = (root / CACHE_DIR / f"v{__version__}") if root is not None else None
        self._ready = False

    def get(self, kind: str, key: str):
        if not self.enabled:
            return None
        try:
            with open(self.dir / kind / key[:2] / f"{key}.json", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def put(self, kind: str, key: str, value) -> None:
        if not self.enabled:
            return
        try:
            self._prepare()
            folder = self.dir / kind / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            data = json.dumps(value, separators=(",", ":")).encode("utf-8")
            write_atomic(str(folder / f"{key}.json"), data, durable=False)
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
