"""Source positions for the few nodes a run reports, exactly as libcst's PositionProvider gives
them, without generating the code of the whole module.

libcst computes positions by re-generating the module's source and counting lines and columns
as it goes (``PositionProvider``): a full code generation of every file, for a handful of
reported nodes. Here a position is computed on demand for the *statement* that holds the node:

1. Python's own parser (``ast``, about twenty times faster than libcst's) gives the line each
   statement starts on; ``_StatementLines`` pairs libcst's statements with ast's, in order.
2. That statement alone is generated with libcst's own position-tracking code generator,
   started at its first line (column 0, with the indentation of its enclosing blocks), and
   stopped as soon as the node asked about is complete.
3. The generated text must equal the source at that line; if it ever does not (a pairing we
   did not foresee), or ast cannot parse what libcst did, the whole module falls back to
   libcst's PositionProvider. Either way the positions are libcst's.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from torchsync_lint.analysis.tree import Tree
from torchsync_lint.pytree import parse_tree

_NEWLINE = re.compile(r"\r\n?|\n")  # libcst's own line-break rule (position_provider.py)
_COMPOUND_STATEMENTS = (cst.BaseCompoundStatement, cst.ExceptHandler, cst.ExceptStarHandler)


class _Done(Exception):
    """Raised inside the code generator once the node asked about is complete."""


class _PartialState(PositionProvidingCodegenState):
    """libcst's position-tracking code generator, stopped at ``target``.

    Positions are written into ``provider._computed`` as libcst writes them; once the target
    is complete (or, with ``start_only``, has started) generation stops, and nothing is
    recorded for the nodes left unfinished.
    """

    target: cst.CSTNode | None = None
    start_only: bool = False
    done: bool = False

    def after_codegen(self, node: cst.CSTNode) -> None:
        super().after_codegen(node)
        if node is self.target:
            self.done = True
            raise _Done

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = CodePosition(self.line, self.column)
        if self.start_only and node is self.target and start_node is None:
            self.provider.starts[node] = start
            self.done = True
            raise _Done
        try:
            yield
        finally:
            if not self.done:  # unwinding after the target: the rest is incomplete
                start = self.provider._computed[start_node].start if start_node is not None else start
                end = self.provider._computed[end_node].end if end_node is not None else CodePosition(self.line, self.column)
                self.provider._computed[node] = CodeRange(start, end)



class LazyPositions:
    """A read-only mapping node -> CodeRange, filled on demand (see the module docstring)."""

    def __init__(self, module: cst.Module, source: str, tree: Tree) -> None:
        self._module = module
        self._source = source
        self._tree = tree
        self._computed: dict[cst.CSTNode, CodeRange] = {}
        self.starts: dict[cst.CSTNode, CodePosition] = {}
        self._lines: _StatementLines | None = None
        self._line_offsets: list[int] | None = None
        self._full = False

    # -- mapping interface ------------------------------------------------------------------
    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._computed.get(node)
        if found is None:
            self._compute(node, start_only=False)
            found = self._computed[node]  # KeyError: not a node of this module
        return found

    def get(self, node: cst.CSTNode, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __contains__(self, node: object) -> bool:
        return self.get(node) is not None  # type: ignore[arg-type]

    def start(self, node: cst.CSTNode) -> CodePosition:
        """Where ``node`` starts; for a compound statement, without generating its body."""
        if node in self._computed:
            return self._computed[node].start
        if node not in self.starts:
            self._compute(node, start_only=True)
            if node not in self.starts:
                return self[node].start
        return self.starts[node]

    def line(self, node: cst.CSTNode) -> int:
        """The line ``node`` starts on: ``start(node).line``, without generating any code when
        ``node`` lies inside a simple statement line that ast says is one physical line (every
        node in it starts there), or is a function or class (libcst starts it at its `def` or
        `class` keyword, as ast does). The summary asks the line of every call and function."""
        if node not in self._computed and node not in self.starts and not self._full:
            lines = self._statement_lines()
            found = lines.keyword_line(node)  # a function or class: its `def`/`class` line
            if found is not None:
                return found
            unit = self._statement_of(node)
            if unit is not node and unit is not None:
                found = lines.one_line(unit)
                if found is not None:
                    return found
        return self.start(node).line

    @property
    def used_fallback(self) -> bool:
        """Did this module need libcst's whole-module PositionProvider? (for tests)"""
        return self._full

    # -- computation ------------------------------------------------------------------------
    def _compute(self, node: cst.CSTNode, *, start_only: bool) -> None:
        if self._full:
            return
        if node is self._module:
            # The whole module: from the top to the line after its last line (libcst ends a
            # last line that has no newline with one), column 0. No statement holds it.
            lines = sum(1 for _ in _NEWLINE.finditer(self._source))
            if self._source and not self._source.endswith(("\n", "\r")):
                lines += 1
            self._computed[node] = CodeRange(CodePosition(1, 0), CodePosition(lines + 1, 0))
            return
        unit = self._statement_of(node)
        start_line = self._statement_lines().start_of(unit) if unit is not None else None
        if unit is None or start_line is None or not self._generate(unit, node, start_line, start_only):
            self._use_provider()

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement (or `except` clause) holding ``node``: a unit that can be
        generated on its own."""
        parents = self._tree.parents
        current: cst.CSTNode | None = node
        while current is not None:
            if isinstance(current, (cst.SimpleStatementLine, *_COMPOUND_STATEMENTS)):
                return current
            current = parents.get(current)
        return None

    def _generate(self, unit: cst.CSTNode, target: cst.CSTNode, line: int, start_only: bool) -> bool:
        state = _PartialState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=self,
            indent_tokens=self._indentation(unit),
            line=line,
        )
        state.target = target
        state.start_only = start_only
        kwargs = {"is_elif": True} if isinstance(unit, cst.If) and isinstance(self._tree.parents.get(unit), cst.If) else {}
        try:
            unit._codegen(state, **kwargs)
        except _Done:
            pass
        # Not where ast said it starts (a pairing we did not foresee): the caller falls back to
        # libcst's provider, which replaces everything recorded here.
        return self._source_matches(line, "".join(state.tokens))

    def _indentation(self, unit: cst.CSTNode) -> list[str]:
        """The indent tokens of every block enclosing ``unit``, outermost first."""
        indents: list[str] = []
        parents = self._tree.parents
        current = parents.get(unit)
        while current is not None:
            if isinstance(current, (cst.IndentedBlock, cst.Match)):  # a match indents its cases
                indents.append(self._module.default_indent if current.indent is None else current.indent)
            current = parents.get(current)
        return indents[::-1]

    def _source_matches(self, line: int, text: str) -> bool:
        if self._line_offsets is None:
            self._line_offsets = [0] + [m.end() for m in _NEWLINE.finditer(self._source)]
        if not 1 <= line <= len(self._line_offsets):
            return False
        offset = self._line_offsets[line - 1]
        if self._source.startswith(text, offset):
            return True
        # The module's last line without a newline: libcst generates one and drops it later.
        newline = self._module.default_newline
        return text.endswith(newline) and offset + len(text) - len(newline) == len(self._source) and self._source.startswith(text[: -len(newline)], offset)

    def _statement_lines(self) -> _StatementLines:
        if self._lines is None:
            self._lines = _StatementLines(self._module, self._source, self._tree)  # (Python's ast parsed here, on the first question that needs it)
        return self._lines

    def _use_provider(self) -> None:
        """libcst's whole-module positions: the slow path, and the reference."""
        wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
        try:
            self._computed = dict(wrapper.resolve(PositionProvider))
        except KeyError as exc:
            # libcst's provider turns a stack overflow in a deep module into a KeyError whose
            # key is the (deep) node: report it as what it is, without rendering the node.
            if isinstance(exc.__context__, RecursionError):
                raise RecursionError("nested too deeply") from None
            raise
        self.starts = {}
        self._full = True


class _StatementLines:
    """The line each libcst statement's generated text starts on (its leading blank and comment
    lines included), from ast statement line numbers. A statement ast cannot pair gets None."""

    def __init__(self, module: cst.Module, source: str, tree: Tree) -> None:
        self._tree = tree
        self._start: dict[cst.CSTNode, int] = {}
        self._single: dict[cst.CSTNode, int] = {}  # simple statement line -> its one physical line
        self._keywords: dict[cst.CSTNode, int] = {}  # function or class -> the line of `def`/`class`
        try:
            parsed = parse_tree(source)
            self._block(list(module.body), parsed.body)
        except (SyntaxError, ValueError, RecursionError, MemoryError, _Mismatch):
            self._start, self._single, self._keywords = {}, {}, {}  # all unknown: positions come from libcst instead

    def start_of(self, unit: cst.CSTNode) -> int | None:
        return self._start.get(unit)

    def one_line(self, unit: cst.CSTNode) -> int | None:
        """The line of a simple statement line whose statements ast places on one physical
        line (from the first one's start to the last one's end), else None."""
        return self._single.get(unit)

    def keyword_line(self, node: cst.CSTNode) -> int | None:
        return self._keywords.get(node)

    def _block(self, statements: list[cst.CSTNode], nodes: list[ast.stmt]) -> None:
        i = 0
        for stmt in statements:
            if i >= len(nodes):
                raise _Mismatch
            if isinstance(stmt, cst.SimpleStatementLine):
                self._start[stmt] = nodes[i].lineno - len(stmt.leading_lines)
                last = nodes[min(i + len(stmt.body), len(nodes)) - 1]
                if last.end_lineno == nodes[i].lineno:
                    self._single[stmt] = nodes[i].lineno
                i += len(stmt.body)
            else:
                self._compound(stmt, nodes[i])
                i += 1
        if i != len(nodes):
            raise _Mismatch

    def _suite(self, suite: cst.BaseSuite, nodes: list[ast.stmt]) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._block(list(suite.body), nodes)
        elif len(suite.body) != len(nodes):  # `if x: a; b` - small statements, no units
            raise _Mismatch

    def _compound(self, stmt: cst.CSTNode, node: ast.stmt) -> None:
        expected = _AST_TYPES.get(type(stmt))
        if expected is None or not isinstance(node, expected):
            raise _Mismatch
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self._keywords[stmt] = node.lineno
            if stmt.decorators:
                first = stmt.decorators[0]
                self._start[stmt] = node.decorator_list[0].lineno - len(first.leading_lines) - len(stmt.leading_lines)
            else:
                self._start[stmt] = node.lineno - len(stmt.lines_after_decorators) - len(stmt.leading_lines)
            self._suite(stmt.body, node.body)
            return
        self._start[stmt] = node.lineno - len(stmt.leading_lines)
        if isinstance(stmt, cst.If):
            # An elif chain is walked in a loop: a thousand `elif`s must not cost a thousand
            # frames (a RecursionError here sends every position to libcst's slow provider).
            while True:
                self._suite(stmt.body, node.body)
                if not isinstance(stmt.orelse, cst.If):
                    break
                if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
                    raise _Mismatch
                stmt, node = stmt.orelse, node.orelse[0]
                self._start[stmt] = node.lineno - len(stmt.leading_lines)
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body, node.orelse)
        elif isinstance(stmt, (cst.For, cst.While)):
            self._suite(stmt.body, node.body)
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body, node.orelse)
        elif isinstance(stmt, cst.With):
            self._suite(stmt.body, node.body)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self._suite(stmt.body, node.body)
            if len(stmt.handlers) != len(node.handlers):
                raise _Mismatch
            for handler, ast_handler in zip(stmt.handlers, node.handlers):
                self._start[handler] = ast_handler.lineno - len(handler.leading_lines)
                self._suite(handler.body, ast_handler.body)
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body, node.orelse)
            if stmt.finalbody is not None:
                self._suite(stmt.finalbody.body, node.finalbody)
        elif isinstance(stmt, cst.Match):
            if len(stmt.cases) != len(node.cases):
                raise _Mismatch
            for case, ast_case in zip(stmt.cases, node.cases):
                self._suite(case.body, ast_case.body)
        else:
            raise _Mismatch


class _Mismatch(Exception):
    """libcst's and ast's statements do not pair up."""


_AST_TYPES: dict[type, tuple[type, ...]] = {
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.Try: (ast.Try,),
    cst.TryStar: (getattr(ast, "TryStar", ast.Try),),
    cst.Match: (getattr(ast, "Match", ast.If),),
}
