"""Memoised answers to a recursive question whose recursion may come back to a question still
being answered (a call cycle: `a` calls `b`, `b` calls `a`), or be cut off at a depth limit.
One memo serves every module's lint of a component, so an answer is reused only where a fresh
computation would give the same one, whoever asked first and from where:

- The question met again answers ``on_cycle`` (unknown, not per step) for now. An answer that
  leaned on such a provisional answer of a question still open further up depends on where
  the asking started, so it is not kept. (Without this, `a` asked before `b` and `b` asked
  before `a` gave different answers, and which rule asked first, `--select`, changed the
  findings.)
- An answer whose recursion met any question still open (its own cycle included) is what that
  question gives when asked first, with nothing open: it is reused only then. Reached from
  inside another question's recursion, the same question may meet that one open on its way,
  where it first met itself.
- A question is asked at a depth (how far the asking has recursed already); the recursion
  stops past ``limit`` (``truncated``). An answer that was cut there holds at its own depth,
  with nothing open, only. An answer that went ``span`` levels deeper than its question without
  being cut is the same at any depth that leaves it that much room (the same recursion,
  shifted).

With a ``ReadLog``, each kept answer also carries what its recursion read of a table that is
still being built (the view's callers table, project/view.py): a hit adds it to the reads of
the computation asking, as if it had been computed again there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

_NONE = 1 << 30  # no open question was leaned on


# Read by an answer that depends on the whole table (the view's device-fed loaders): any
# change of the table may change it.
EVERY_ENTRY = "*"


class ReadLog:
    """What the computations under way read of a table that may still change: one set per
    computation, innermost last (none open: nothing is recorded)."""

    def __init__(self) -> None:
        self.frames: list[set] = []

    def read(self, item: Hashable) -> None:
        if self.frames:
            self.frames[-1].add(item)

    def read_all(self, items) -> None:
        if self.frames:
            self.frames[-1].update(items)

    def reading(self, compute: Callable[[], Any]) -> tuple[Any, set]:
        """``compute()``'s result, and what it read (also added to the computation around it)."""
        self.frames.append(set())
        try:
            result = compute()
        finally:
            reads = self.frames.pop()
            if self.frames:
                self.frames[-1].update(reads)
        return result, reads


class Kept(NamedTuple):
    answer: Any
    depth: int  # the depth it was asked at
    span: int | None  # how many levels deeper its recursion went; None: the depth limit cut it
    cyclic: bool  # its recursion met a question still open (maybe itself)
    reads: frozenset = frozenset()  # what it read of the logged table (CycleMemo's ``log``)

    def anywhere(self) -> bool:
        """Does it hold inside any other question's recursion (room allowing)?"""
        return self.span is not None and not self.cyclic


class CycleMemo:
    def __init__(self, limit: int, log: ReadLog | None = None) -> None:
        """``limit``: the deepest depth the recursion runs at without being cut; ``log``: where
        the reads of the answers are recorded while computations are open there."""
        self.limit = limit
        self.log = log
        self.done: dict[Hashable, Kept] = {}
        self.deepest = 0  # the deepest depth the current answer's recursion has reached
        self._open: dict[Hashable, int] = {}  # question -> its level among the open ones
        self._cut = _NONE  # the shallowest open question the current answer leaned on
        self._cut_off = False  # the current answer's recursion was cut by the depth limit
        self._cyclic = False  # the current answer's recursion met a question still open

    def known(self, key: Hashable, depth: int = 0) -> Kept | None:
        """The kept answer of ``key`` that holds when asked now, at ``depth``; or None."""
        kept = self.done.get(key)
        if kept is None:
            return None
        if self._open and not kept.anywhere():
            return None
        if kept.span is None:
            return kept if depth == kept.depth else None
        if depth + kept.span > self.limit:
            return None
        if depth + kept.span > self.deepest:
            self.deepest = depth + kept.span  # (an answer built on it needs that room too)
        return kept

    def solve(self, key: Hashable, compute: Callable[[], Any], on_cycle: Any, depth: int = 0) -> Any:
        kept = self.known(key, depth)
        if kept is not None:
            if self.log is not None and kept.reads:
                self.log.read_all(kept.reads)
            return kept.answer
        level = self._open.get(key)
        if level is not None:
            self._cut = min(self._cut, level)
            self._cyclic = True
            self.reached(depth)  # (asked this deep: deeper still, the limit may cut it instead)
            return on_cycle
        level = len(self._open)
        self._open[key] = level
        outer = (self._cut, self._cut_off, self._cyclic, self.deepest)
        self._cut, self._cut_off, self._cyclic, self.deepest = _NONE, False, False, depth
        logged = self.log is not None and bool(self.log.frames)
        reads: set = set()
        try:
            if logged:
                result, reads = self.log.reading(compute)
            else:
                result = compute()
        finally:
            del self._open[key]
            inner = (self._cut, self._cut_off, self._cyclic, self.deepest)
            self._cut = outer[0]
            self._cut_off, self._cyclic, self.deepest = outer[1] or inner[1], outer[2] or inner[2], max(outer[3], inner[3])
        cut, cut_off, cyclic, deepest = inner
        if cut >= level:  # leaned on nothing still open above it
            new = Kept(result, depth, None if cut_off else deepest - depth, cyclic, frozenset(reads))
            old = self.done.get(key)
            if old is None or _wider(new, old):
                self.done[key] = new
        else:
            self._cut = min(self._cut, cut)
        return result

    def reached(self, depth: int) -> None:
        """The current answer's recursion went to ``depth`` (a level that is no question of its own)."""
        if depth > self.deepest:
            self.deepest = depth

    def truncated(self) -> None:
        """The current answer was cut short by the depth limit."""
        self._cut_off = True


def _wider(new: Kept, old: Kept) -> bool:
    """Does ``new`` hold wherever ``old`` does, and more widely?"""
    if new.anywhere() != old.anywhere():
        return new.anywhere()
    if (new.span is None) != (old.span is None):
        return new.span is not None
    return new.span is not None and new.span < old.span
