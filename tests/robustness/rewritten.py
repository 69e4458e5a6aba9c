"""What a rewrite hands back, and the plumbing every rewrite shares."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

KEPT, GATED, GONE = "kept", "gated", "gone"


@dataclass
class Rewritten:
    """The rewritten program: its files (relative path -> source; the fixture's own module
    keeps its name, a module a rewrite adds is ``robust_helpers.py``) and what the analysis
    should find there for each marker (``(original line, code)`` -> GATED or GONE; a marker
    not named must be found as before: KEPT)."""

    files: dict[str, str]
    expect: dict[tuple[int, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class Source:
    """A fixture as a rewrite sees it: its text (markers tagged with their original line, see
    harness.tag_markers), file name, and markers as ``(line, code)``."""

    text: str
    name: str
    markers: tuple[tuple[int, str], ...]

    @property
    def marker_lines(self) -> set[int]:
        return {line for line, _ in self.markers}


class Replacer(cst.CSTTransformer):
    """Replaces nodes by identity (a node, or a list of statements for a statement) and puts
    statements before given module-level statements: edits computed on one analysed tree,
    applied in one pass."""

    def __init__(self, replace: dict[int, object], before: dict[int, list] | None = None, after_imports: list | None = None):
        self.replace = replace
        self.before = before or {}
        self.after_imports = after_imports or []

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)  # leave_Module
        new = self.replace.get(id(original))
        if new is None:
            return updated
        return cst.FlattenSentinel(new) if isinstance(new, list) else new

    def leave_Module(self, original, updated):
        body = []
        for orig, stmt in zip(original.body, updated.body):
            body += self.before.get(id(orig), [])
            body.append(stmt)
        if self.after_imports:
            at = first_code_index(body)
            body[at:at] = self.after_imports
        return updated.with_changes(body=body)


def first_code_index(body) -> int:
    """The index of the first top-level statement that is neither an import nor the docstring:
    what a rewrite adds after the imports goes there, before any code that could use it."""
    for i, stmt in enumerate(body):
        is_import = isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
        is_doc = i == 0 and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString)
        if not (is_import or is_doc):
            return i
    return len(body)


def last_import_index(body) -> int:
    """The index of the last top-level import (or of the docstring), -1 when neither."""
    last = -1
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            last = i
        elif i == 0 and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString):
            last = 0
    return last


def statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def defn(header: str, body: list, blank_lines: int = 2) -> cst.BaseCompoundStatement:
    """``header`` (``def f(a):``, ``class C(B):``) with ``body`` (statements, reused as they
    are, comments and all)."""
    node = cst.parse_statement(header + "\n    pass\n")
    return node.with_changes(body=cst.IndentedBlock(body=body), leading_lines=[cst.EmptyLine()] * blank_lines)


def assign_to(names: list[str], value: str) -> str:
    """``a, b = value`` / ``a = value`` / ``value`` for no names."""
    return f"{', '.join(names)} = {value}" if names else value


def returning(names: list[str]) -> list:
    return [statement(f"return {', '.join(names)}")] if names else []
