"""Which lines of one module call, directly or through other project functions, the function
that holds a given line of another module. The verifier attributes a runtime sync to the
innermost line of the script it runs; a finding the project view reports in a helper
(`helpers.py:4`, reached from `train.py:16` through `engine.log_step`) is matched to it there.
"""

from __future__ import annotations

import ast

from torchsync_lint.project.view import ProjectView
from torchsync_lint.pytree import parse_tree


def enclosing_function(text: str, line: int) -> str | None:
    """The qualified name the project view gives the function holding ``line`` (`f`,
    `Class.method`; a nested function counts as the top-level one around it)."""
    try:
        tree = parse_tree(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return node.name
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.lineno <= line <= (item.end_lineno or item.lineno):
                    return f"{node.name}.{item.name}"
    return None


def call_lines(view: ProjectView, rel: str, qual: str, caller: str) -> list[int]:
    """The lines of module ``caller`` whose calls reach ``rel``'s function ``qual``."""
    lines: set[int] = set()
    seen: set[str] = set()
    todo = [f"{rel}:{qual}"]
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        for path, call, _ in view.callers(ref):
            if path == caller:
                lines.add(call["line"])
            elif call.get("caller"):
                todo.append(call["caller"])
    return sorted(lines)
