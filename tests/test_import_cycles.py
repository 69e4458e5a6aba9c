"""No import cycles among torchsync_lint's own modules (issue 22).

What counts as an import:

- a **module-level** import (at the top of a module, or inside a module-level `if`/`try`, not
  under `if TYPE_CHECKING:`): these must form no cycle at all;
- a **function-level** (lazy) import, which the lint path uses to keep start-up fast (a run
  served by the cache never imports libcst or the rules). A lazy import is a dependency all
  the same: the graph of all imports, lazy ones included, must be acyclic too, so laziness
  never hides a layering knot. The lazy edges listed in ``KNOWN_LAZY_CYCLES`` close cycles
  today in code other work owns (analysis/, verify/); each is named with its reason, and no
  other lazy edge may close a cycle.
- `from pkg import name` counts as an import of the submodule `pkg.name` when there is one,
  else of `pkg` itself; `importlib.import_module` (the rule and reporter registries) is not
  an import statement and is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "torchsync_lint"

# (importer, imported): lazy edges that close a cycle, each kept on purpose for now.
KNOWN_LAZY_CYCLES = {
    # index.py builds Bindings on demand; bindings.py builds on the index (analysis/, issue 21)
    ("torchsync_lint.analysis.index", "torchsync_lint.analysis.bindings"),
    # verify/__init__ runs verify.command (and budget_command, which builds on it); command
    # reads SCALE_ENV back from verify/__init__ (issues 16, 24)
    ("torchsync_lint.verify", "torchsync_lint.verify.command"),
    ("torchsync_lint.verify", "torchsync_lint.verify.budget_command"),
    # containment kills a leftover session with launch.kill_session; launch builds on containment (issue 23)
    ("torchsync_lint.verify.containment", "torchsync_lint.verify.launch"),
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def _imports(name: str, path: Path, is_package: bool, modules) -> tuple[set[str], set[str]]:
    """(module-level imports, function-level imports) of one module, as our module names."""

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    top: set[str] = set()
    lazy: set[str] = set()

    def visit(body, at_top: bool) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            found: set[str] = set()
            if isinstance(node, ast.Import):
                found = {m for alias in node.names if (m := owner(alias.name))}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    target = full if full in modules else owner(module)
                    if target:
                        found.add(target)
            (top if at_top else lazy).update(found - {name})
            inner_top = at_top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    visit(inner, inner_top)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, True)
    return top, lazy


def _graphs():
    modules = _modules()
    top, every = {}, {}
    for name, (path, is_package) in modules.items():
        t, lazy = _imports(name, path, is_package, modules)
        top[name] = t
        every[name] = t | lazy
    return top, every


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_checker_sees_our_imports_and_finds_a_cycle():
    top, every = _graphs()
    assert len(top) > 100 and "torchsync_lint.project.sessions" in top["torchsync_lint.api"]
    assert "torchsync_lint.engine" in every["torchsync_lint.project.session"] - top["torchsync_lint.project.session"]  # a lazy one
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_cycles_among_module_level_imports():
    top, _ = _graphs()
    assert _cycles(top) == []


def test_lazy_imports_close_no_cycle_but_the_known_ones():
    _, every = _graphs()
    without_known = {m: {t for t in targets if (m, t) not in KNOWN_LAZY_CYCLES} for m, targets in every.items()}
    assert _cycles(without_known) == []
    for importer, imported in KNOWN_LAZY_CYCLES:  # each known edge still exists (else drop it from the list)
        assert imported in every[importer], (importer, imported)


def test_notebooks_are_a_source_format_below_the_linter_and_the_fixer():
    _, every = _graphs()

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in every.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    below = reaches("torchsync_lint.notebook") | reaches("torchsync_lint.sources")
    for upper in ("torchsync_lint.api", "torchsync_lint.fixing.command", "torchsync_lint.fixing.loop", "torchsync_lint.reporters", "torchsync_lint.project.session", "torchsync_lint.engine"):
        assert upper not in below, upper
