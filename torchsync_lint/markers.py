"""Inline expectations in fixture scripts, read from comment tokens (not a line regex).

    x = loss.item()          # expect: TSL101
    y = x.to(d)              # expect: TSL301, TSL305
    n = int(mask.sum())      # expect-sync: known static false negative
    # torchsync-fixture: steps=8 requires=torchvision
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)")
_EXPECT_SYNC = re.compile(r"#\s*expect-sync:?\s*(?P<why>.*)$")
_PRAGMA = re.compile(r"#\s*torchsync-fixture:\s*(?P<body>.*)$")


@dataclass(frozen=True)
class Marker:
    line: int
    code: str | None  # None for expect-sync
    kind: str  # "expect" | "expect-sync"
    note: str = ""


def _comments(source: str):
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):  # \r and \r\n end lines too
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError):
        return  # an unterminated string or bracket: keep the comments read so far


def read_markers_source(source: str) -> list[Marker]:
    out: list[Marker] = []
    for line, text in _comments(source):
        m = _EXPECT.search(text)
        if m:
            out += [Marker(line, c.strip(), "expect") for c in m.group("codes").split(",")]
        s = _EXPECT_SYNC.search(text)
        if s:
            out.append(Marker(line, None, "expect-sync", s.group("why").strip()))
    return sorted(out, key=lambda mk: (mk.line, mk.code or ""))


def read_markers(path: str) -> list[Marker]:
    with tokenize.open(path) as fh:  # the encoding the file declares (PEP 263), UTF-8 by default
        return read_markers_source(fh.read())


def read_pragmas(path: str) -> dict[str, str]:
    """`# torchsync-fixture: steps=8 requires=torchvision` -> {"steps": "8", "requires": "torchvision"}."""
    with tokenize.open(path) as fh:
        source = fh.read()
    result: dict[str, str] = {}
    for _, text in _comments(source):
        m = _PRAGMA.search(text)
        if m:
            for item in m.group("body").split():
                key, _, value = item.partition("=")
                result[key] = value
    return result
