"""Text edits on source: positions to offsets, overlap selection, application, imports.

Positions in an ``Edit`` are 1-based lines and 1-based columns counted in characters, end
exclusive (what libcst's PositionProvider gives, plus one). Only ``\\n``, ``\\r\\n`` and
``\\r`` end a line, as in Python's tokenizer (``str.splitlines`` would also split on form
feeds and U+2028, which do not end a Python line).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchsync_lint.lines import split_lines
from torchsync_lint.types import Finding, Fix


class EditError(ValueError):
    """An edit that cannot be applied to this source (out of range, self-overlapping)."""


def detect_newline(text: str) -> str:
    if "\r\n" in text:
        return "\r\n"
    if "\r" in text:
        return "\r"
    return "\n"


class LineIndex:
    """Converts (line, column) positions to character offsets in one source text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = [0]
        self.lengths: list[int] = []  # line length without its ending
        for line in split_lines(text):
            content = line.rstrip("\r\n")
            self.lengths.append(len(content))
            self.starts.append(self.starts[-1] + len(line))
        if not self.lengths:
            self.lengths.append(0)

    def offset(self, line: int, column: int) -> int:
        if line == len(self.lengths) + 1 and column == 1:
            return len(self.text)  # just past the last line
        if not (1 <= line <= len(self.lengths)):
            raise EditError(f"line {line} is outside the file (1-{len(self.lengths)})")
        if not (1 <= column <= self.lengths[line - 1] + 1):
            raise EditError(f"column {column} is outside line {line}")
        return self.starts[line - 1] + column - 1


@dataclass(frozen=True)
class Span:
    """An edit resolved to offsets: replace text[start:end] with content."""

    start: int
    end: int
    content: str


def resolve(fix: Fix, index: LineIndex, newline: str) -> list[Span]:
    """The fix's edits as offset spans, sorted; content uses the file's newline style."""
    spans = []
    for edit in fix.edits:
        start = index.offset(edit.line, edit.column)
        end = index.offset(edit.end_line, edit.end_column)
        if end < start:
            raise EditError(f"edit ends before it starts ({edit.line}:{edit.column})")
        spans.append(Span(start, end, normalize_newlines(edit.content, newline)))
    spans.sort(key=lambda s: (s.start, s.end))
    for a, b in zip(spans, spans[1:]):
        if overlaps(a, b):
            raise EditError("the fix's own edits overlap")
    return spans


def normalize_newlines(text: str, newline: str) -> str:
    if "\r" not in text and newline == "\n":
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)


def overlaps(a: Span, b: Span) -> bool:
    """Ranges that share a character, or two insertions at the same point (order unknown)."""
    if a.start == a.end == b.start == b.end:
        return True
    return a.start < b.end and b.start < a.end


def apply_spans(text: str, spans: list[Span]) -> str:
    """Apply non-overlapping spans (in any order) to ``text``."""
    out = []
    pos = 0
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        out.append(text[pos : span.start])
        out.append(span.content)
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


@dataclass
class Candidate:
    """One distinct fix and the findings that carry it (identical fixes are merged)."""

    fix: Fix
    findings: list[Finding]
    spans: list[Span]

    @property
    def start(self) -> int:
        return self.spans[0].start if self.spans else 0


def select_non_overlapping(candidates: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """Greedy by position: the first fix wins; a fix touching a chosen one waits a round."""
    chosen: list[Candidate] = []
    waiting: list[Candidate] = []
    taken: list[Span] = []
    for cand in sorted(candidates, key=lambda c: (c.start, c.findings[0].code)):
        if any(overlaps(s, t) for s in cand.spans for t in taken):
            waiting.append(cand)
            continue
        chosen.append(cand)
        taken.extend(cand.spans)
    return chosen, waiting


# -- imports --------------------------------------------------------------------------------

def import_statement(spec: str) -> str:
    """`torch` -> `import torch`; a full `import ...`/`from ... import ...` is kept as is."""
    spec = spec.strip()
    if spec.startswith(("import ", "from ")):
        return spec
    return f"import {spec}"


def _bound_by_import(spec: str) -> tuple[str, str | None]:
    """(what must be imported, the name it binds): `torch.nn` -> ("torch.nn", "torch")."""
    stmt = import_statement(spec)
    if stmt.startswith("from "):
        module, _, names = stmt[5:].partition(" import ")
        return f"{module.strip()}:{names.strip()}", names.strip()
    module = stmt[7:].strip()
    return module, module.split(".")[0]


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _top_level_simple_statements(module: cst.Module):
    """Simple statements that run at import time: module body, top-level if/try/with blocks."""
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, (cst.If, cst.Try, cst.TryStar, cst.With)):
            for block in (getattr(stmt, "body", None), getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None)):
                if isinstance(block, cst.Else | cst.Finally):
                    block = block.body
                if isinstance(block, cst.If):  # elif
                    stack.append(block)
                elif isinstance(block, cst.IndentedBlock):
                    stack.extend(block.body)
            for handler in getattr(stmt, "handlers", ()):
                stack.extend(handler.body.body if isinstance(handler.body, cst.IndentedBlock) else ())


def module_imports(module: cst.Module) -> tuple[set[str], set[str]]:
    """(imported specs, names bound by imports) at module level."""
    specs: set[str] = set()
    names: set[str] = set()
    for small in _top_level_simple_statements(module):
        if isinstance(small, cst.Import):
            for alias in small.names:
                dotted = _dotted(alias.name)
                if alias.asname is None:
                    specs.add(dotted)
                    names.add(dotted.split(".")[0])
                elif isinstance(alias.asname.name, cst.Name):
                    names.add(alias.asname.name.value)
                    if alias.asname.name.value == dotted:  # `import os as os`
                        specs.add(dotted)
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            if isinstance(small.names, cst.ImportStar):
                continue
            for alias in small.names:
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else _dotted(alias.name)
                names.add(local)
                if local == _dotted(alias.name):
                    specs.add(f"{_dotted(small.module)}:{local}")
    return specs, names


def other_module_bindings(module: cst.Module) -> set[str]:
    """Names bound at module level by something other than an import (assignment, def...)."""
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
    for small in _top_level_simple_statements(module):
        targets = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        for target in targets:
            if isinstance(target, cst.Name):
                names.add(target.value)
    return names


def missing_imports(module: cst.Module, wanted: list[str]) -> tuple[list[str], list[str]]:
    """(import statements to add, specs that clash with a non-import binding of their name)."""
    specs, names = module_imports(module)
    others = other_module_bindings(module)
    add: list[str] = []
    clashes: list[str] = []
    # `import torch.nn` binds `torch` to the torch package itself, as `import torch` does.
    packages = {s.split(".")[0] for s in specs if ":" not in s}
    for spec in dict.fromkeys(wanted):
        key, name = _bound_by_import(spec)
        if key in specs or (key == name and name in packages):
            continue  # already imported
        if name in others or name in names:
            clashes.append(spec)  # `os = ...`, or `import numpy as os`: the name means something else
            continue
        add.append(import_statement(spec))
    return add, clashes


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import(stmt: cst.CSTNode, future: bool = False) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return False
    if future:
        return all(isinstance(s, cst.ImportFrom) and s.module is not None and _dotted(s.module) == "__future__" for s in stmt.body)
    return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def import_insertion(module: cst.Module, text: str, before: int, statements: list[str], newline: str) -> Span:
    """A span inserting ``statements`` after the last top-level import that ends at or before
    offset ``before`` (the first edit that needs them), else after the docstring and
    ``__future__`` imports, else after the header comments (shebang, coding cookie)."""
    body = list(module.body)
    # Statement k ends at ends[k]; ends[-1] of an empty prefix is where the header ends.
    header = module.with_changes(body=[], footer=[], has_trailing_newline=True).code if module.header else ""
    offset = len(header)
    ends = []
    for stmt in body:
        offset += len(module.code_for_node(stmt))
        ends.append(offset)
    k = 0  # insert after body[:k]
    if body and _is_docstring(body[0]):
        k = 1
    while k < len(body) and _is_import(body[k], future=True):
        k += 1
    for i in range(k, len(body)):
        if ends[i] > before:
            break
        if _is_import(body[i]):
            k = i + 1
    block = newline.join(statements) + newline
    prefix = header if k == 0 else module.with_changes(body=body[:k], footer=[], has_trailing_newline=True).code
    if text.startswith(prefix):
        return Span(len(prefix), len(prefix), block)
    if k == len(body) and text == prefix.rstrip("\r\n"):  # the last import ends the file, unterminated
        return Span(len(text), len(text), newline + block.rstrip("\r\n"))
    raise EditError("cannot find a line boundary for the import")
