"""`check --show-suggestions`: the rewrites `--fix` never applies, as text.

A suggestion (``Applicability.SUGGESTION``) changes what the code does in a way the rule cannot
finish on its own (TSL304: the host half of a uint8 pipeline without the device half breaks
training). So it is never part of `--diff`, whose output is exactly what `--fix` would write
and is meant for `patch -p0` / `git apply -p0`. Here each suggestion is a block of prose with
its location, and a replacement a rule attaches is shown as `replace ... with ...` lines: no
`---`/`+++`/`@@` headers, so `patch` and `git apply` find no patch in it and refuse it.
"""

from __future__ import annotations

from torchsync_lint.types import Applicability, Edit


def suggested(results) -> list:
    """(finding, its FileResult) for every finding that carries a suggestion, in report order."""
    items = [(f, r) for r in results for f in r.findings if f.fix is not None and f.fix.applicability is Applicability.SUGGESTION]
    return sorted(items, key=lambda item: item[0].sort_key)


def render(results) -> str:
    out: list[str] = []
    items = suggested(results)
    for finding, result in items:
        out.append(f"{finding.location}: {finding.code} suggestion (not applied by --fix): {finding.fix.title}")
        for edit in finding.fix.edits:
            out.append(_describe(edit, result.source))
    n = len(items)
    out.append(f"{n} suggestion{'' if n == 1 else 's'}; --fix and --diff never apply them.")
    return "".join(line + "\n" for line in out)


def _describe(edit: Edit, source) -> str:
    where = f"cell {edit.cell}, " if edit.cell is not None else ""
    old = _old_text(edit, source)
    what = f"replace `{old}`" if old else "insert"
    return f"    {where}line {edit.line}, column {edit.column}: {what} with `{edit.content}`"


def _old_text(edit: Edit, source) -> str:
    if source is None:
        return ""
    cell_lines = getattr(source, "cell_lines", None)
    lines = cell_lines(edit.cell) if edit.cell is not None and cell_lines else source.text.splitlines()
    if not (0 < edit.line <= edit.end_line <= len(lines)):
        return ""
    if edit.line == edit.end_line:
        return lines[edit.line - 1][edit.column - 1 : edit.end_column - 1]
    parts = [lines[edit.line - 1][edit.column - 1 :], *lines[edit.line : edit.end_line - 1], lines[edit.end_line - 1][: edit.end_column - 1]]
    return "\\n".join(parts)
