"""The project's import graph, and which modules a module's results may depend on.

Import statements are cut out of the module's text and parsed alone with Python's own `ast`
(``import_names``: far cheaper than parsing the whole module, with `ast` or libcst; a run
served by the cache never loads libcst) and resolved by the project's Layout.

Two relations come out of it:

- ``imports``: module -> the project modules its import statements name. A module with no
  edge either way is not connected: it is linted alone, as before there was a project view.
- ``reach``: ``imports`` plus, for an import that names a package, every module inside that
  package (the view resolves `pkg.sub.f` after a bare `import pkg`). The connected components
  of ``reach`` (edges taken both ways) bound what the view can tell a module: its result
  depends on the summaries of its component and on the project-wide facts, nothing else.

A run over a few files of a large project needs only their components: ``rows_needed`` finds
the modules whose import rows decide them, parsing only the modules whose import statements
could name one of them (a word test on the import statements' text, a superset of what Python
would resolve), so that `check train.py` with no cache does not parse the whole repository.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from torchsync_lint.project.layout import Layout
from torchsync_lint.pytree import parse_tree


def parse_module(source: str) -> ast.Module | None:
    """``source``'s ast, or None when Python cannot parse it."""
    try:
        return parse_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def import_names(source: str, tree: ast.Module | None = None) -> list[str]:
    """The dotted names a module's import statements name (relative ones keep their dots);
    `from a import b` names both `a` and `a.b` (b may be a submodule). ``tree``: the ast of
    ``source``, when the caller has parsed it already; without one, only the import statements
    are parsed (``_scanned_imports``) unless they cannot be cut out of the text alone."""
    if tree is None:
        scanned = _scanned_imports(source)
        if scanned is not None:
            return scanned
        tree = parse_module(source)
    return _names_of(tree.body) if tree is not None else []


def _names_of(body: list[ast.stmt]) -> list[str]:
    names: list[str] = []
    for node in _statements(body):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names.append(base)
            sep = "" if base.endswith(".") or not base else "."
            names += [f"{base}{sep}{alias.name}" for alias in node.names if alias.name != "*"]
    return names


# Comments, string literals (whatever their prefix: the quote starts one) and the word
# `import`, matched left to right, so that the keyword inside a string or a comment is never
# taken for one. Outside strings and comments, `import` only ever belongs to an import
# statement. (Every branch starts with a literal character, so the regex engine skips the text
# between matches fast; a `\b` before `import` would stop that: the word's start is checked
# apart.)
_LEXEME = re.compile(
    r'#[^\n]*'
    r'|"""(?:\\.|[^\\])*?"""'
    r"|'''(?:\\.|[^\\])*?'''"
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'"
    r"|import\b",
    re.S,
)
_MAX_STATEMENT_LINES = 40  # an import statement longer than this: the whole module is parsed


def _scanned_imports(source: str) -> list[str] | None:
    """``import_names`` of ``source``, parsing only its import statements: for each `import`
    keyword, the whole lines from its statement's first (back over backslash continuations)
    to the first line where they parse (a parenthesised name list, a `try: import x` with its
    `except`). Python's ast of the whole module costs far more, and the import graph reads
    nearly every module while few need that ast. None when a statement cannot be cut out so
    (its line starts inside a string, or in a header spanning lines): the caller parses the
    whole module then. A false match (the word in a Python 3.12 f-string that nests its own
    quotes) parses to no import; a real one such an f-string hid would be missed. A module with
    a syntax error elsewhere keeps the edges of its imports."""
    if "import" not in source:
        return []
    names: list[str] = []
    covered = 0  # the text before this offset was parsed with an earlier statement
    for found in _LEXEME.finditer(source):
        at = found.start()
        if found.group() != "import" or at < covered or _inside_a_name(source, at):
            continue
        start = source.rfind("\n", 0, at) + 1
        while start > 0 and _ends_with_backslash(source, start - 1):  # a continued line
            start = source.rfind("\n", 0, start - 1) + 1
        parsed = _statements_from(source, start, found.end())
        if parsed is None:
            return None
        body, covered = parsed
        names += _names_of(body)
    return names


def _inside_a_name(text: str, at: int) -> bool:
    """Is the word matched at ``at`` the end of a longer name (`_import`, `transform`)? (What a
    leading `\b` would test: the regexes here leave it out to stay fast.)"""
    return at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")


def _ends_with_backslash(source: str, newline: int) -> bool:
    """Does the line that ends at offset ``newline`` (a line feed) end with a backslash?"""
    end = newline - 1 if newline > 0 and source[newline - 1] == "\r" else newline
    return end > 0 and source[end - 1] == "\\"


def _statements_from(source: str, start: int, after: int) -> tuple[list[ast.stmt], int] | None:
    """(the statements of the fewest whole lines from offset ``start`` past ``after`` that
    parse, the offset where those lines end), or None."""
    end = source.find("\n", after)
    opened = source.find("(", after, len(source) if end < 0 else end)
    if opened >= 0:  # `from m import (a,\n b)`: on to the line of the closing parenthesis
        closed = source.find(")", opened)
        end = source.find("\n", closed) if closed >= 0 else -1
    indented = source[start : start + 1] in (" ", "\t")
    for _ in range(_MAX_STATEMENT_LINES):
        stop = len(source) if end < 0 else end
        try:
            tree = parse_tree("if 1:\n" + source[start:stop] if indented else source[start:stop])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            if end < 0:
                return None
            end = source.find("\n", end + 1)
            continue
        body = tree.body[0].body if indented else tree.body  # type: ignore[attr-defined]
        return body, stop
    return None


# Where statements nest, in the order of the text: imports are statements, so expressions are
# never walked (a module's expressions are most of its nodes).
_BODIES = ("body", "handlers", "orelse", "finalbody", "cases")


def _statements(body: list[ast.stmt]):
    """Every statement under ``body``, at any depth (functions, classes, blocks), in the order
    of the text (as the import statements cut out of it are read)."""
    stack = [iter(body)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        inner = [stmt for field in _BODIES for stmt in getattr(node, field, None) or ()]
        if inner:
            stack.append(iter(inner))


def resolve_imports(layout: Layout, rel: str, names: list[str], packages: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(the modules ``rel``'s import names resolve to, the modules inside the packages they
    name), both sorted, ``rel`` itself left out. ``packages`` memoises a package's modules."""
    direct: set[str] = set()
    inside: set[str] = set()
    importer = layout.root / rel
    for name in names:
        found = layout.resolve(name, importer)
        if found is None:
            continue
        target = layout.relpath(found[0])
        direct.add(target)
        if target.endswith("/__init__.py"):
            prefix = target[: -len("__init__.py")]
            if prefix not in packages:
                packages[prefix] = [m for m in layout.modules if m.startswith(prefix)]
            inside.update(packages[prefix])
    direct.discard(rel)
    inside -= direct | {rel}
    return sorted(direct), sorted(inside)


def components(edges: dict[str, list[str]]) -> dict[str, str]:
    """Module -> the smallest module of its connected component (edges taken both ways)."""
    parent: dict[str, str] = {m: m for m in edges}

    def find(m: str) -> str:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for m, targets in edges.items():
        for t in targets:
            if t not in parent:
                parent[t] = t
            a, b = find(m), find(t)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {m: find(m) for m in parent}


_IMPORT_KEYWORD = re.compile(r"(?:import|from)\b")  # (the word's start is checked apart: a leading `\b` makes the regex engine try every position)
_WORD = re.compile(r"[^\W\d]\w*")  # an identifier (Python's may be any letters)
_RELATIVE = re.compile(r"from[\s\\]*\.")  # (a backslash continuation may come before the dot)


def import_hints(text: str) -> tuple[frozenset[str], bool]:
    """(every word of the text that could belong to an import statement, whether one could be
    relative): from each `import` or `from` keyword to the end of its line, through an opened
    parenthesis and backslash continuations. Text in strings and comments may add words; no
    import statement's name is missed."""
    words: set[str] = set()
    relative = False
    for found in _IMPORT_KEYWORD.finditer(text):
        start = found.start()
        if _inside_a_name(text, start):
            continue
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        while text[start:end].rstrip().endswith("\\") and end < len(text):  # a backslash continuation
            nxt = text.find("\n", end + 1)
            end = len(text) if nxt < 0 else nxt
        opened = text.find("(", start, end)
        if opened >= 0:
            closed = text.find(")", opened)
            end = max(end, len(text) if closed < 0 else closed)
        region = text[start:end]
        words.update(_WORD.findall(region))
        relative = relative or bool(_RELATIVE.match(region))
    return frozenset(words), relative


def _path_words(rel: str, packages: set[str]) -> set[str]:
    """The words an import statement that reaches ``rel`` must use: its own name (`mod` of
    `pkg/sub/mod.py`, `sub` of `pkg/sub/__init__.py`), which every import of it names last
    or alone, and the name of each directory above it that is a regular package (in
    ``packages``): importing a package reaches every module inside it. A directory without an
    `__init__.py` is only ever part of a longer name, so its word would match imports of
    other modules (a test suite's `metrics` beside `fixtures/metrics/`) for nothing."""
    parts = rel.split("/")
    dirs, stem = parts[:-1], parts[-1].rsplit(".", 1)[0]
    words = {dirs[-1] if stem == "__init__" and dirs else stem}
    words.update(d for i, d in enumerate(dirs) if "/".join(dirs[: i + 1]) in packages)
    return words


def rows_needed(files: list[str], seeds: list[str], text_of: Callable[[str], str | None], reach_of: Callable[[str], list[str]]) -> set[str]:
    """The modules whose import rows must be read for the components of ``seeds`` to be exact:
    every module of those components, and every module whose import statements could name one
    of them (``reach_of(m)`` reads ``m``'s row). A module left out cannot import any module of
    those components, nor be imported by one, so its row changes none of their components."""
    resolved: dict[str, list[str]] = {}
    hints: dict[str, tuple[frozenset[str], bool]] = {}
    names: set[str] = set()
    packages = {m[: -len("/__init__.py")] for m in files if m.endswith("/__init__.py")}
    frontier = set(seeds)
    while frontier:
        for m in sorted(frontier):
            resolved[m] = reach_of(m)
        top = components(resolved)  # over the rows known so far
        tops = {top[s] for s in seeds}
        relevant = {m for m, t in top.items() if t in tops}
        for m in relevant:
            names |= _path_words(m, packages)
        frontier = {m for m in relevant if m not in resolved}
        for m in files:
            if m in resolved or m in frontier:
                continue
            if m not in hints:
                text = text_of(m)
                hints[m] = import_hints(text) if text is not None else (frozenset(), False)
            words, relative = hints[m]
            if relative or not words.isdisjoint(names):  # (a relative import names no path: always read)
                frontier.add(m)
    return set(resolved)

