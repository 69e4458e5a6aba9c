"""Progress of a verify run on stderr, when stderr is a terminal (never in a report).

A line per finished script (``[i/N] path: status, seconds``) and one status line,
rewritten in place, with each running script's step ``k/N`` and the elapsed time.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

_CLEAR = "\r\x1b[K"
_REDRAW_S = 0.2


class Progress:
    def __init__(self, stream: TextIO, scripts: int, enabled: bool | None = None) -> None:
        self.stream = stream
        self.scripts = scripts
        self.enabled = _is_tty(stream) if enabled is None else enabled
        self.done = 0
        self.begin = time.monotonic()
        self._running: dict[str, tuple[int, int]] = {}  # path -> (steps so far, steps expected)
        self._lock = threading.Lock()
        self._drawn = 0.0

    def started(self, path: str, total_steps: int) -> None:
        with self._lock:
            self._running[path] = (0, total_steps)
            self._draw(force=True)

    def step(self, path: str, steps: int) -> None:
        with self._lock:
            if path in self._running:
                self._running[path] = (steps, self._running[path][1])
            self._draw()

    def finished(self, path: str, outcome: str) -> None:
        with self._lock:
            self._running.pop(path, None)
            self.done += 1
            if self.enabled:
                self.stream.write(f"{_CLEAR}[{self.done}/{self.scripts}] {path}: {outcome} ({self._elapsed()})\n")
            self._draw(force=True)

    def close(self) -> None:
        with self._lock:
            if self.enabled:
                self.stream.write(_CLEAR)
                self.stream.flush()

    def status_line(self) -> str:
        running = ", ".join(f"{path} step {steps}/{total}" for path, (steps, total) in self._running.items())
        return f"[{self.done}/{self.scripts} done, {self._elapsed()}] {running}".rstrip()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._drawn < _REDRAW_S):
            return
        self._drawn = now
        self.stream.write(_CLEAR + self.status_line())
        self.stream.flush()

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self.begin:.1f}s"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
