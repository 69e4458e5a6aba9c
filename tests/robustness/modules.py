"""Rewrite: the fixture's helpers (every module-level function and class but `main`, and the
constants they read) move to another module of the project, `robust_helpers.py`, and the
fixture imports them back (`from robust_helpers import make_data, scaled`). The new module
gets a copy of the fixture's imports. Expected: the same findings, now in the other module
(the analysis must follow the import: a project, not a file).
"""

from __future__ import annotations

import libcst as cst

from .loops import collect
from .rewritten import Rewritten, Source, last_import_index

HELPERS = "robust_helpers"


def _is_import(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_main_guard(stmt) -> bool:
    return isinstance(stmt, cst.If) and "__main__" in cst.Module([]).code_for_node(stmt.test)


def _bound(stmt) -> list[str]:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return [stmt.name.value]
    if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Assign, cst.AnnAssign)) for s in stmt.body):
        names = []
        for small in stmt.body:
            for target in small.targets if isinstance(small, cst.Assign) else [small]:
                node = target.target
                if not isinstance(node, cst.Name):
                    return []
                names.append(node.value)
        return names
    return []


def _docstring(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString)


def move_to_module(src: Source) -> Rewritten | None:
    module = cst.parse_module(src.text)
    body = list(module.body)
    moved, kept, names = [], [], []
    for stmt in body:
        bound = _bound(stmt)
        if bound and bound != ["main"]:
            moved.append(stmt)
            names += bound
        else:
            kept.append(stmt)
    if not any(isinstance(s, (cst.FunctionDef, cst.ClassDef)) for s in moved):
        return None
    left = {b for s in kept for b in _bound(s)} | {"main"}
    if any(isinstance(n, cst.Name) and n.value in left for n in collect(moved, cst.Name)):
        return None  # a helper needs what stays behind: the modules would import each other
    if any(not (_is_import(s) or _is_main_guard(s) or _docstring(s) or _bound(s) == ["main"]) for s in kept):
        return None  # other module-level code: moving the helpers might reorder what it sees
    imports = [s for s in kept if _is_import(s)]
    helpers = cst.Module(body=[s.with_changes(leading_lines=[]) for s in imports] + moved)
    back = cst.parse_statement(f"from {HELPERS} import {', '.join(names)}")
    kept_body = list(kept)
    at = last_import_index(kept_body) + 1
    kept_body[at:at] = [back]
    main = module.with_changes(body=kept_body)
    return Rewritten({src.name: main.code, f"{HELPERS}.py": helpers.code})
