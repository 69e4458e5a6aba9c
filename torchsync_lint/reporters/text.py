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


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _files(n: int) -> str:
    return f"{n} file{_s(n)}"


# A file these codes name was never linted (not read, not decoded, not parsed); TSL903 (a rule
# crashed) still ran the other rules, so that file counts as checked.
_NOT_LINTED = ("TSL900", "TSL901", "TSL902")


def _checked(results) -> int:
    """The files actually linted: `check missing.py` checked none."""
    return sum(1 for r in results if not any(e.code in _NOT_LINTED for e in r.errors))


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
    summary = f"Found {len(warnings)} finding{_s(len(warnings))} in {_files(_checked(results))} checked"
    failed = sorted({r.path: sorted({e.code for e in r.errors}) for r in results if r.errors}.items())
    if failed:
        codes = sorted({code for _, found in failed for code in found})
        summary += f"; {_files(len(failed))} could not be linted ({', '.join(codes)})"
    hidden = sum(1 for f in warnings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE) if not unsafe else 0
    if fixable:
        summary += f"; {fixable} fixable with `--fix`" + (" --unsafe-fixes" if unsafe else "")
        if hidden:
            summary += f" ({hidden} more with `--unsafe-fixes`)"
    elif hidden:  # as ruff: "(N hidden fixes can be enabled with the `--unsafe-fixes` option)"
        summary += f"; {hidden} fixable with `--fix --unsafe-fixes`"
    if not options.get("quiet"):  # `--quiet`: the findings only
        out.append(summary + ".")
    return "\n".join(out) + "\n" if out else ""
