"""A minimal fix applier for this family's tests, used until the shared fixer lands.

It applies the edits of the given findings (non-overlapping, last first), adds missing
``import X`` lines for ``fix.imports`` after the module docstring/first imports, and
returns the new source. It deliberately does not loop to a fixed point.
"""

from __future__ import annotations

import re

from torchsync_lint.types import Applicability, Finding

_RANK = {Applicability.SAFE: 0, Applicability.UNSAFE: 1, Applicability.SUGGESTION: 2}


def apply_fixes(source: str, findings: list[Finding], applicability: Applicability = Applicability.SAFE) -> str:
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    edits, imports = [], []
    for f in findings:
        if f.fix is None or _RANK[f.fix.applicability] > _RANK[applicability]:
            continue
        edits += [(offset(e.line, e.column), offset(e.end_line, e.end_column), e.content) for e in f.fix.edits]
        imports += list(f.fix.imports)
    edits.sort(reverse=True)
    for (start, end, _), (next_start, _, _) in zip(edits[1:], edits[:-1]):
        assert end <= next_start, "overlapping edits"
    out = source
    for start, end, content in edits:
        out = out[:start] + content + out[end:]
    for module in dict.fromkeys(imports):
        if not re.search(rf"^import {re.escape(module)}$", out, re.M):
            out = f"import {module}\n" + out
    return out
