"""Inline suppression: `# noqa`, `# noqa: TSL101,TSL2`, `# torchsync: ignore[TSL101]`.

A comment suppresses a finding when it sits on any line of the statement that holds the
finding (for a compound statement, any line of its header), as in Fixit's comment walk.
Comments are read with `tokenize`, so `"# noqa"` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize

import libcst as cst

# Codes are letters then digits (`E501`, `TSL1`), as flake8 and ruff read them: the words after
# them (`# noqa: E501 t is fine`) are a comment, not codes (`t` would match every TSL code).
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*torchsync:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)

_MAYBE_SUPPRESSED = re.compile(r"noqa|torchsync:", re.I)  # a cheap pre-check of the whole text

ALL = "*"


def comment_codes(source: str, noqa: bool = True) -> dict[int, set[str]]:
    """Line -> suppressed codes (ALL for a bare `# noqa`). Unparseable comments are skipped.

    ``noqa=False`` reads only `# torchsync: ignore[...]`: the flake8 adapter leaves `# noqa`
    to flake8, which applies it itself (and honours `--disable-noqa`).
    """
    result: dict[int, set[str]] = {}
    if not _MAYBE_SUPPRESSED.search(source):
        return result  # no such comment anywhere: skip the tokenizer (most files)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source, newline=None).readline))  # \r and \r\n end lines too
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return result
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        for pattern in (_NOQA, _IGNORE) if noqa else (_IGNORE,):
            for m in pattern.finditer(tok.string):
                codes = m.group("codes")
                if pattern is _IGNORE and codes is not None and not codes.strip():
                    codes = None
                found = {ALL} if codes is None else {c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c}
                result.setdefault(tok.start[0], set()).update(found)
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
