"""`--format text`: `path:line:col: CODE message [*]`, the source line, a caret, a summary.

In a notebook the position is ruff's `path:cell N:line:col` and the line is the cell's."""

from __future__ import annotations

from torchsync_lint.reporters import all_findings, register
from torchsync_lint.types import Applicability

RED, BOLD, CYAN, DIM, RESET = "\033[31m", "\033[1m", "\033[36m", "\033[2m", "\033[0m"


def _style(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{RESET}" if color else text


def _lines(source, cell: int | None, cache: dict, path: str) -> list[str]:
    """The lines a finding's line counts in: the file's, or a notebook cell's."""
    if source is None:
        return []
    if (path, cell) not in cache:
        cell_lines = getattr(source, "cell_lines", None)
        cache[path, cell] = cell_lines(cell) if cell is not None and cell_lines else source.text.splitlines()
    return cache[path, cell]


@register("text")
def render(results, options) -> str:
    color = bool(options.get("color"))
    show_source = not options.get("quiet")
    unsafe = bool(options.get("unsafe_fixes"))
    sources = {r.path: r.source for r in results if r.source is not None}
    lines_by_path: dict = {}
    out: list[str] = []
    fixable = 0
    items = all_findings(results)
    for f in items:
        mark = ""
        if f.fix is not None and (f.fix.applicability is Applicability.SAFE or (unsafe and f.fix.applicability is Applicability.UNSAFE)):
            mark = " [*]"
            fixable += 1
        where = _style(f"{f.location}:", BOLD, color)
        code = _style(f.code, RED, color)
        out.append(f"{where} {code} {f.message}{mark}")
        src = _lines(sources.get(f.path), f.cell, lines_by_path, f.path)
        if show_source and f.severity != "error" and 0 < f.line <= len(src):
            text = src[f.line - 1].expandtabs(1)
            width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(text) - f.column + 1)
            out.append(_style(f"    {text}", DIM, color))
            out.append(_style("    " + " " * (f.column - 1) + "^" * width, CYAN, color))
    warnings = [f for f in items if f.severity != "error"]
    errors = [f for f in items if f.severity == "error"]
    files = len(results)
    summary = f"Found {len(warnings)} finding{'s' if len(warnings) != 1 else ''} in {files} file{'s' if files != 1 else ''} checked"
    if errors:
        summary += f"; {len(errors)} file{'s' if len(errors) != 1 else ''} could not be linted"
    if fixable:
        summary += f"; {fixable} fixable with `--fix`" + (" --unsafe-fixes" if unsafe else "")
    if not options.get("quiet"):  # `--quiet`: the findings only
        out.append(summary + ".")
    return "\n".join(out) + "\n" if out else ""
