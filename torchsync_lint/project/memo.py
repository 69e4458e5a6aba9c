"""Memoised answers to a recursive question whose recursion may come back to a question still
being answered (a call cycle: `a` calls `b`, `b` calls `a`).

The question met again answers ``on_cycle`` (unknown, not per step) for now. An answer that
leaned on such a provisional answer of a question still open further up depends on where the
asking started, so it is not kept; only answers that depend on their own question alone are.
Without this, `a` asked before `b` and `b` asked before `a` gave different answers, and which
rule asked first (`--select`) changed the findings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

_NONE = 1 << 30  # no open question was leaned on


class CycleMemo:
    def __init__(self, done: dict | None = None) -> None:
        self.done: dict[Hashable, Any] = dict(done or {})
        self._open: dict[Hashable, int] = {}  # question -> its depth among the open ones
        self._cut = _NONE  # the shallowest open question the current answer leaned on

    def solve(self, key: Hashable, compute: Callable[[], Any], on_cycle: Any) -> Any:
        if key in self.done:
            return self.done[key]
        depth = self._open.get(key)
        if depth is not None:
            self._cut = min(self._cut, depth)
            return on_cycle
        depth = len(self._open)
        self._open[key] = depth
        outer, self._cut = self._cut, _NONE
        try:
            result = compute()
        finally:
            del self._open[key]
            inner, self._cut = self._cut, outer
        if inner >= depth:
            self.done[key] = result  # leaned on nothing still open above it
        else:
            self._cut = min(self._cut, inner)
        return result

    def truncated(self) -> None:
        """The current answer was cut short by a depth limit: how deep it went depends on where
        the asking started, so only the outermost open question keeps its answer."""
        self._cut = min(self._cut, 0)

    def fork(self) -> CycleMemo:
        """A memo of its own that starts from this one's answers."""
        return CycleMemo(self.done)
