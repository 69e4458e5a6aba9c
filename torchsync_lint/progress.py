"""A progress line for long runs: `torchsync-lint: 37/200 files`, on stderr, rewritten in place
and erased when the run ends. Only when stderr is a terminal: CI logs, pipes and files get
nothing (a log full of carriage returns helps no one), and stdout (the report) is never used.

The line is redrawn at most every ``interval`` seconds (a cached run finishes hundreds of files
in a blink; a redraw per file would cost more than the files), and always for the last file.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Tick = Callable[[int, int], None]  # (files done, files in all)

ERASE = "\r\033[K"  # to column 1, clear to the end of the line


def wanted(stream: TextIO) -> bool:
    """A terminal, and the user did not ask for silence (TERM=dumb cannot redraw a line)."""
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError, OSError):  # closed, or no isatty
        return False


@contextmanager
def progress(stream: TextIO | None = None, *, interval: float = 0.1, clock: Callable[[], float] = time.monotonic) -> Iterator[Tick | None]:
    """Yields the callback a run reports to (None when no line is wanted); erases the line at
    the end, on an error or Ctrl-C too."""
    stream = sys.stderr if stream is None else stream
    if not wanted(stream):
        yield None
        return
    shown = [False, -1.0]  # anything drawn; when last drawn

    def tick(done: int, total: int) -> None:
        now = clock()
        if done < total and shown[1] >= 0 and now - shown[1] < interval:
            return
        shown[0], shown[1] = True, now
        _write(stream, f"\rtorchsync-lint: {done}/{total} file{'s' if total != 1 else ''}")

    try:
        yield tick
    finally:
        if shown[0]:
            _write(stream, ERASE)


def _write(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # the terminal went away: the run goes on without a line
        pass
