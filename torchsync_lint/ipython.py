"""IPython syntax in notebook cells, stood in for by neutral Python lines of the same count.

Line magics (`%matplotlib inline`, `%time f()`), shell escapes (`!pip install`, `files = !ls`),
help (`obj?`, `?obj`) and autocall (`/f x`) at the start of a logical line are not Python. Each
becomes `pass` (or `name = None` for an assignment, so the name is rebound to an unknown host
value rather than keeping an older binding) with the indentation it had and a tag comment, so
line numbers hold, the parser and the rules see plain Python, a fix never edits it, and
``restore`` puts the line back as written. A `\\` line end continues a magic (its
continuation lines stand in at the magic's own indentation, wherever they were indented).
The tag carries the notebook's nonce (notebook.py), so a user's comment that looks like a
tag is never taken for one. Lines inside
brackets or strings, and comments, are never taken for IPython (`x = (a\n % b)` is modulo).
A cell magic keeps its Python body when it runs Python (`%%time`, `%%timeit`, `%%capture`,
`%%prun`, `%%debug`); a cell in another language (`%%bash`, `%%writefile`, `%%html`, ...) is
not Python at all.
"""

from __future__ import annotations

import re

from torchsync_lint.lines import split_lf

# The tag holds none of the engine's trigger words (`torch`, `device`, ...).
_TAG = "  # @tsl-ipython {token} {nonce}"
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_ESCAPES = ("%", "!", "?", "/", ";", ",")  # cannot start a Python logical line
_ASSIGNED_ESCAPE = re.compile(r"([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_HELP = re.compile(r"\?{1,2}\s*$")


def python_view(text: str, nonce: str = "0") -> tuple[str | None, dict[int, tuple[str, str]]]:
    """The cell as Python, with IPython lines replaced by tagged neutral lines of the same
    count, and tag -> original line; (None, {}) for a cell in another language. ``text``
    ends its lines with ``\\n`` only (notebook.py takes the other line ends off first)."""
    lines = split_lf(text)
    magics: dict[int, tuple[str, str]] = {}
    out: list[str] = []
    depth, quote, continued, magic_indent = 0, None, False, None
    for n, line in enumerate(lines):
        body, ending = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if n == 0 and body.startswith("%%"):
            name = re.match(r"%%(\w*)", body).group(1)
            if name not in PYTHON_CELL_MAGICS:
                return None, {}
            out.append(_neutral(body, magics, "pass", nonce) + ending)
            continue
        starts_logical = depth == 0 and quote is None and not continued
        if magic_indent is not None or (starts_logical and _is_escape(body)):
            stand_in = "pass" if magic_indent is not None else _stand_in(body)
            out.append(_neutral(body, magics, stand_in, nonce, magic_indent) + ending)
            if magic_indent is None:
                magic_indent = _indent(body)
            if not body.rstrip().endswith("\\"):  # a magic continues over `\` line ends
                magic_indent = None
            continued = False
            continue
        depth, quote, continued = _scan(body, depth, quote)
        out.append(line)
    return "".join(out), magics


def _is_escape(body: str) -> bool:
    code = body.strip()
    if not code or code.startswith("#"):
        return False
    if code.startswith(_ESCAPES) or _ASSIGNED_ESCAPE.match(code):
        return True
    code = body[: _scan(body, 0, None, comment_at=True)].rstrip()
    return bool(_HELP.search(code)) and not code.lstrip().startswith("#")  # `obj?`, `obj.attr??`


def _stand_in(body: str) -> str:
    m = _ASSIGNED_ESCAPE.match(body.strip())
    return f"{m.group(1)} = None" if m else "pass"


def _neutral(body: str, magics: dict[int, tuple[str, str]], stand_in: str, nonce: str, indent: str | None = None) -> str:
    """The stand-in line for ``body``, at ``indent`` (default: the line's own)."""
    token = len(magics)
    indent = _indent(body) if indent is None else indent
    neutral = f"{indent}{stand_in}{_TAG.format(token=token, nonce=nonce)}"
    magics[token] = (body, neutral)
    return neutral


def _indent(body: str) -> str:
    return body[: len(body) - len(body.lstrip(" \t"))]


def _scan(body: str, depth: int, quote: str | None, comment_at: bool = False):
    """Bracket depth, open triple quote and backslash continuation after ``body`` (one line
    without its ending), or with ``comment_at`` where its comment starts (len when none)."""
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if quote:
            if c == "\\":
                i += 2
            elif body.startswith(quote, i):
                i += len(quote)
                quote = None
            else:
                i += 1
            continue
        if c == "#":
            return i if comment_at else (depth, None, False)
        if c in "'\"":
            quote = body[i : i + 3] if body[i : i + 3] in ("'''", '"""') else c
            i += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        i += 1
    if comment_at:
        return n
    continued = body.endswith("\\")
    if quote is not None and len(quote) == 1 and not continued:
        quote = None  # an unterminated one-line string: a syntax error the parser reports
    return depth, quote, continued


def restore(text: str, magics: dict[int, tuple[str, str]], nonce: str = "0") -> str | None:
    """``text`` (a cell's Python, possibly edited) with its IPython lines as written; None when
    an edit changed or dropped one of the neutral lines."""
    out, seen = [], []
    tag_at_end = re.compile(r"  # @tsl-ipython (\d+) " + re.escape(nonce) + "$")
    for line in split_lf(text):
        body, ending = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        m = tag_at_end.search(body)
        if m and int(m.group(1)) in magics:
            original, neutral = magics[int(m.group(1))]
            if body != neutral:
                return None
            seen.append(int(m.group(1)))
            line = original + ending
        out.append(line)
    if sorted(seen) != sorted(magics):
        return None
    return "".join(out)
