"""Plain data shared by the engine, the rules, the fixer and the reporters."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchsync_lint.files import SourceFile


class Applicability(str, enum.Enum):
    """How a fix may be applied (ruff's safety levels)."""

    SAFE = "safe"  # same results, faster: applied by --fix
    UNSAFE = "unsafe"  # may change behaviour: needs --unsafe-fixes
    SUGGESTION = "suggestion"  # shown as a diff only, never written


@dataclass(frozen=True)
class Edit:
    """Replace the source between two positions (1-based line, 1-based column, end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str
    cell: int | None = None  # notebooks: the cell the lines count in (1-based, all cells)

    def to_dict(self) -> dict:
        out = {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }
        if self.cell is not None:
            out["cell"] = self.cell
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Edit:
        return cls(d["line"], d["column"], d["end_line"], d["end_column"], d["content"], d.get("cell"))


@dataclass(frozen=True)
class Fix:
    """A fix is data on a finding: text edits, how safe they are, and imports they need."""

    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE
    imports: tuple[str, ...] = ()  # module names the edits need, e.g. ("torch",)

    def to_dict(self) -> dict:
        return {
            "applicability": self.applicability.value,
            "title": self.title,
            "edits": [e.to_dict() for e in self.edits],
            "imports": list(self.imports),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fix:
        return cls(d["title"], tuple(Edit.from_dict(e) for e in d["edits"]), Applicability(d["applicability"]), tuple(d.get("imports", ())))


@dataclass(frozen=True)
class Finding:
    """One diagnostic. Lines and columns are 1-based; the end is exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    severity: str = "warning"  # "warning" for rules, "error" for files we could not lint
    fix: Fix | None = None
    cell: int | None = None  # notebooks: line and end_line count in this cell (1-based, all cells)

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def location(self) -> str:
        """`path:line:col`, or ruff's `path:cell N:line:col` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
            "fix": self.fix.to_dict() if self.fix else None,
            "cell": self.cell,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        """The inverse of ``to_dict`` (the result cache stores findings this way)."""
        fix = Fix.from_dict(d["fix"]) if d.get("fix") else None
        return cls(d["path"], d["line"], d["column"], d["end_line"], d["end_column"], d["code"], d["name"], d["message"], d["severity"], fix, d.get("cell"))


@dataclass(frozen=True)
class Valid:
    """A near-miss that a rule must not flag. ``config`` is passed to the engine."""

    code: str
    config: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Invalid:
    """Code a rule must flag.

    ``line`` pins the line of the (first) finding; ``message_contains`` pins part of its
    message; ``expected_fix`` is the whole source after applying this rule's fixes at
    ``applicability`` (or better).
    """

    code: str
    line: int | None = None
    message_contains: str | None = None
    expected_fix: str | None = None
    applicability: Applicability | None = None
    config: dict = field(default_factory=dict)


@dataclass
class FileResult:
    """One file's outcome: its findings, its errors (TSL90x: the file, or a rule, failed) and
    the source they were found in (reporters print snippets from it)."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    source: SourceFile | None = None

    @classmethod
    def of(cls, path: str, found: list[Finding], source: SourceFile | None = None, *, file_errors=None) -> FileResult:
        """The result of a lint that gave ``found``, findings and TSL90x errors together;
        ``file_errors(errors)``: the errors in the file's terms (a notebook's cells)."""
        errors = [f for f in found if f.severity == "error"]
        return cls(path, [f for f in found if f.severity != "error"], file_errors(errors) if file_errors else errors, source)

    @property
    def error(self) -> Finding | None:
        return self.errors[0] if self.errors else None
