"""Suppression comments: `# noqa`, `# noqa: TSL101,TSL2`, `# torchsync: ignore[TSL101]` (one
statement) and `# torchsync-lint: noqa[: CODES]`, `# flake8: noqa[: CODES]` (the whole file).

A line comment suppresses a finding when it sits on any line of the statement that holds the
finding (for a compound statement, any line of its header), as in Fixit's comment walk.
Comments are read with `tokenize`, so `"# noqa"` inside a string does not count.

A file-level directive is an own-line comment anywhere in the file, as ruff reads
`# ruff: noqa` (flake8 reads it on any line; a trailing one is ambiguous, so it is no
directive here). `# flake8: noqa: CODES` exempts those codes, as ruff reads it (flake8 itself
ignores that form with a warning). The flake8 adapter (``noqa=False``) leaves every `# noqa`
and `# flake8: noqa` to flake8 and applies only our own spellings.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

import libcst as cst

# Codes are letters then digits (`E501`, `TSL1`), as flake8 and ruff read them: the words after
# them (`# noqa: E501 t is fine`) are a comment, not codes (`t` would match every TSL code).
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*torchsync:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_CODES = r"(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?"
_FILE_OURS = re.compile(r"#\s*torchsync-lint:\s*noqa" + _CODES, re.I)
_FILE_FLAKE8 = re.compile(r"#\s*flake8[:=]\s*noqa" + _CODES, re.I)

_MAYBE_SUPPRESSED = re.compile(r"noqa|torchsync:", re.I)  # a cheap pre-check of the whole text

ALL = "*"


@dataclass(frozen=True)
class Directive:
    """One line-level directive: where it is and what it names (``codes`` None: all)."""

    line: int
    start: int  # 0-based columns of the directive inside its line, end exclusive
    end: int
    codes: tuple[str, ...] | None  # upper case, as written (prefixes too)
    comment_start: int  # the comment token holding it: its column and text
    comment: str
    own_line: bool  # nothing but indentation before the comment
    line_text: str  # the physical line (the fix of TSL904 rewrites its comment)

    def matching(self, code: str) -> list[str]:
        """The entries of this directive that suppress ``code`` (ALL for a blanket one)."""
        if self.codes is None:
            return [ALL]
        return [c for c in self.codes if code.startswith(c)]


def _comments(source: str) -> list[tokenize.TokenInfo]:
    if not _MAYBE_SUPPRESSED.search(source):
        return []  # no such comment anywhere: skip the tokenizer (most files)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source, newline=None).readline))  # \r and \r\n end lines too
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    return [tok for tok in tokens if tok.type == tokenize.COMMENT]


def _split_codes(codes: str) -> tuple[str, ...]:
    return tuple(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c)


def directives(source: str, noqa: bool = True) -> list[Directive]:
    """Every line-level directive, in source order (see ``comment_codes`` for ``noqa``)."""
    found = []
    for tok in _comments(source):
        own_line = not tok.line[: tok.start[1]].strip()
        for pattern in (_NOQA, _IGNORE) if noqa else (_IGNORE,):
            for m in pattern.finditer(tok.string):
                codes = m.group("codes")
                if pattern is _IGNORE and codes is not None and not codes.strip():
                    codes = None
                at = tok.start[1]
                found.append(Directive(tok.start[0], at + m.start(), at + m.end(), None if codes is None else _split_codes(codes), at, tok.string, own_line, tok.line))
    return sorted(found, key=lambda d: (d.line, d.start))


def file_codes(source: str, noqa: bool = True) -> set[str]:
    """The codes (ALL for every one) that own-line file-level directives exempt the file from."""
    result: set[str] = set()
    for tok in _comments(source):
        if tok.line[: tok.start[1]].strip():
            continue  # a trailing comment: `x = 1  # flake8: noqa` is no file directive
        for pattern in (_FILE_OURS, _FILE_FLAKE8) if noqa else (_FILE_OURS,):
            m = pattern.match(tok.string)
            if m is not None:
                codes = m.group("codes")
                result |= {ALL} if codes is None else set(_split_codes(codes))
    return result


def comment_codes(source: str, noqa: bool = True) -> dict[int, set[str]]:
    """Line -> suppressed codes (ALL for a bare `# noqa`). Unparseable comments are skipped.

    ``noqa=False`` reads only `# torchsync: ignore[...]`: the flake8 adapter leaves `# noqa`
    to flake8, which applies it itself (and honours `--disable-noqa`).
    """
    result: dict[int, set[str]] = {}
    for d in directives(source, noqa):
        result.setdefault(d.line, set()).update({ALL} if d.codes is None else d.codes)
    return result


def matches(code: str, suppressed: set[str]) -> bool:
    # `# noqa: TSL1` suppresses the whole family, as flake8 prefixes do.
    return ALL in suppressed or any(code.startswith(s) for s in suppressed)


def statement_lines(node: cst.CSTNode, parents: dict, positions) -> range:
    """The lines of the statement (or compound-statement header) that contains ``node``.

    ``positions`` is the analysis's LazyPositions: a header's lines come from its start and the
    end of its test, without generating the statement's body."""
    child = node
    current = parents.get(node)
    while current is not None:
        if isinstance(current, cst.SimpleStatementLine):
            rng = positions[current]
            return range(rng.start.line, rng.end.line + 1)
        if isinstance(current, (cst.If, cst.While, cst.For, cst.With, cst.FunctionDef, cst.ClassDef, cst.Try, cst.Match)):
            if child is not getattr(current, "body", None) and child is not getattr(current, "orelse", None):
                start = positions.start(current).line
                return range(start, _header_end(current, positions, start) + 1)
        if isinstance(current, cst.Module):
            break
        child = current
        current = parents.get(current)
    rng = positions[node]
    return range(rng.start.line, rng.end.line + 1)


def _header_end(stmt: cst.CSTNode, positions: dict, start: int) -> int:
    """Last line of a compound statement's header (`if a and\n b:` spans two)."""
    if isinstance(stmt, (cst.If, cst.While)):
        part = stmt.test
    elif isinstance(stmt, cst.For):
        part = stmt.iter
    elif isinstance(stmt, cst.With) and stmt.items:
        part = stmt.items[-1]
    else:
        return start
    found = positions.get(part)
    return found.end.line if found is not None else start
