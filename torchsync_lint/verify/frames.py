"""Attribute a runtime event to the innermost frame that belongs to the user's script.

A sync inside torchmetrics (or any library) is reported at the line of the user's script
that called into the library, which is where the static finding (and the fix) lives.
"""

from __future__ import annotations

import os
import sys
import threading
from types import FrameType


class UserFrameFinder:
    """Fast path for the emulator, which asks on every recorded op: walk live frames
    outward and compare code filenames against a pre-normalised set (no abspath per frame
    for the common case where runpy gave the code object the exact path we passed)."""

    def __init__(self, user_file: str) -> None:
        self.user_file = os.path.abspath(user_file)
        self._names = {user_file, self.user_file}

    def line(self, skip: int = 1) -> int:
        return self._innermost(sys._getframe(skip))

    def line_or_main_thread(self, skip: int = 1) -> int:
        """As ``line``, but a thread with no frame of the script (autograd's per-device worker
        thread runs a CUDA backward, so a sync in it has no Python caller) gets the line the
        main thread is at: the ``loss.backward()`` waiting for that thread."""
        line = self._innermost(sys._getframe(skip))
        if line or threading.current_thread() is threading.main_thread():
            return line
        return self._innermost(sys._current_frames().get(threading.main_thread().ident))

    def _innermost(self, frame: FrameType | None) -> int:
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in self._names:
                return frame.f_lineno
            frame = frame.f_back
        return 0
