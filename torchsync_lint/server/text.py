"""Positions and edits between our findings and an LSP client, without the protocol library.

Findings count lines and columns from 1, in code points, with an exclusive end. LSP counts
from 0, in the client's position encoding (UTF-16 unless it negotiated another), and breaks
lines at `\\n`, `\\r\\n` and `\\r` only, as Python's tokenizer does; `str.splitlines` would also
break at form feeds and Unicode separators and shift every line below them.
"""

from __future__ import annotations

from typing import NamedTuple

from torchsync_lint.lines import split_lines


class Position(NamedTuple):
    line: int  # 0-based
    character: int  # 0-based, in the client's units


def lines(text: str) -> list[str]:
    """``text``'s lines with their endings, as LSP counts them (and Python's tokenizer, and
    the fixer's edits)."""
    return split_lines(text)


def _units(chars: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(chars)
    if encoding == "utf-8":
        return len(chars.encode("utf-8", "surrogatepass"))
    return len(chars) + sum(1 for ch in chars if ord(ch) > 0xFFFF)


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def to_client(rows: list[str], line: int, column: int, encoding: str = "utf-16") -> Position:
    """1-based (line, code-point column) -> the client's 0-based position (clamped to the text)."""
    index = line - 1
    if index < 0:
        return Position(0, 0)
    if index >= len(rows):
        return Position(len(rows), 0)
    body = _body(rows[index])
    return Position(index, _units(body[: max(column - 1, 0)], encoding))


def from_client(rows: list[str], position: Position, encoding: str = "utf-16") -> tuple[int, int]:
    """The client's 0-based position -> 1-based (line, code-point column)."""
    if position.line >= len(rows):
        return len(rows) + 1 if rows else 1, 1
    body = _body(rows[position.line])
    used = 0
    for index, ch in enumerate(body):
        if used >= position.character:
            return position.line + 1, index + 1
        used += _units(ch, encoding)
    return position.line + 1, len(body) + 1


def offset_to_point(text: str, offset: int) -> tuple[int, int]:
    """Character offset -> 1-based (line, code-point column)."""
    line = 1
    start = 0
    for row in lines(text):
        end = start + len(row)
        if end > offset or end == len(text) and not text.endswith(("\n", "\r")):
            break
        line += 1
        start = end
    return line, offset - start + 1


def replacement(old: str, new: str) -> tuple[tuple[int, int], tuple[int, int], str] | None:
    """One edit that turns ``old`` into ``new``: (start, end) as 1-based (line, column) of
    ``old`` and the text between them; None when nothing changed. The common head and tail are
    left alone (an editor keeps its cursor and folds), never splitting a `\\r\\n`."""
    if old == new:
        return None
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    if head and old[head - 1] == "\r" and old[head : head + 1] == "\n":
        head -= 1
    end = len(old) - tail
    if tail and end > 0 and old[end - 1] == "\r" and old[end : end + 1] == "\n":
        tail -= 1
        end += 1
    return offset_to_point(old, head), offset_to_point(old, end), new[head : len(new) - tail]

