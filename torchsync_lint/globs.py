"""Glob patterns for `exclude`, `extend-exclude` and `per-file-ignores`, matched as ruff does.

ruff compiles these with the `globset` crate: `*` matches any run of characters, `/` included;
`?` one character; `[abc]` / `[!abc]` a class; `{a,b}` alternatives; `**/` zero or more
directories (`**/test_*.py` matches `test_x.py` at the top too) and a trailing `/**`
everything below a directory. A pattern is tried against the path relative to the project
root (the directory of the pyproject.toml) and against the file's basename, so
`"engine.py"` matches `src/proj/engine.py` and `"tests/**"` matches everything under
`tests/`. (gitignore patterns follow different rules: see gitignore.py.)
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regex that fully matches what ``pattern`` matches (a posix path, no leading `./`)."""
    return re.compile(_translate(pattern), re.DOTALL)


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")  # zero or more directories
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append(".*")  # globset's default: `*` also crosses `/`
            i += 1
        elif pattern[i] == "?":
            out.append(".")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)  # `[]a]`: a `]` right after `[` is literal
            if end < 0:
                out.append(re.escape(pattern[i]))
                i += 1
                continue
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "{":
            end = pattern.find("}", i)
            if end < 0:
                out.append(re.escape(pattern[i]))
                i += 1
                continue
            choices = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(choice) for choice in choices) + ")")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def matches(pattern: str, path: str) -> bool:
    """Does ``pattern`` match ``path`` (posix, relative to the project root) or its basename?"""
    pattern = pattern.rstrip("/") or pattern  # `legacy/` means the directory `legacy`
    regex = compile_glob(pattern)
    if regex.fullmatch(path):
        return True
    return regex.fullmatch(path.rsplit("/", 1)[-1]) is not None

