"""Text split into lines, in the two ways the tool reads them.

- ``split_ends``: as Python's tokenizer (and so every finding's line number) counts lines: a
  line ends at ``\\r\\n``, ``\\r`` or ``\\n``, never at a form feed or U+2028 (where
  ``str.splitlines`` would split).
- ``split_lf``: at ``\\n`` only, as `patch` and `git apply` read a file, and as a notebook's
  Python view is built (its cells' other line ends are taken off first).
"""

from __future__ import annotations

import re

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
_LF_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def split_ends(text: str) -> list[tuple[str, str]]:
    """(line, its ending) for each line of ``text``; the last ending is "" when it has none."""
    return [(body, end) for body, end in _LINE.findall(text) if body or end]


def split_lines(text: str) -> list[str]:
    """The lines of ``split_ends``, each with its ending; ``"".join(split_lines(t)) == t``."""
    return [body + end for body, end in split_ends(text)]


def split_lf(text: str) -> list[str]:
    """The lines of ``text`` ended at ``\\n`` only, each with its ending; they join to ``text``."""
    return _LF_LINE.findall(text)
