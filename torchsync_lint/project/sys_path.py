"""The directories a script puts on `sys.path` before its imports: `sys.path.insert(0,
os.path.join(os.path.dirname(__file__), "lib"))`, the same through a small helper (`def
add_path(p): sys.path.insert(0, p)`), or in a sibling module the script imports first (the
`import _init_paths` idiom of detection code). The layout (project/layout.py) tries them for
the imports nothing else resolves.

Read with Python's `ast` from the module's top level; a path it cannot compute (`os.getcwd()`,
a command-line argument, `Path(...)` arithmetic) adds nothing. A relative string is taken
relative to the script's directory, where such scripts are run from.
"""

from __future__ import annotations

import ast
import os

from torchsync_lint.pytree import parse_tree

_PATH_FUNCTIONS = frozenset({"dirname", "abspath", "realpath", "normpath", "join"})
_MAX_HELPERS = 4


def path_additions(text: str, path: str) -> tuple[list[str], list[str]]:
    """(the directories ``text``, the source of the module at ``path``, adds to `sys.path`,
    the plain `import X` names of its top level, in order)."""
    try:
        tree = parse_tree(text, path)
    except (SyntaxError, ValueError, RecursionError):
        return [], []
    names: dict[str, str] = {"__file__": os.path.abspath(path)}
    helpers: dict[str, int] = {}  # function -> the parameter it puts on sys.path
    added: list[str] = []
    imported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and len(helpers) < _MAX_HELPERS:
            index = _helper_parameter(node)
            if index is not None:
                helpers[node.name] = index
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _evaluate(node.value, names, path)
            if value is not None:
                names[node.targets[0].id] = value
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names if alias.asname is None and "." not in alias.name]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            argument = _added_argument(node.value, helpers)
            value = _evaluate(argument, names, path) if argument is not None else None
            if value is not None:
                added.append(os.path.normpath(value))
    return added, imported


def _helper_parameter(func: ast.FunctionDef) -> int | None:
    """The index of the parameter ``func`` hands to `sys.path.insert/append`, if it does."""
    params = [a.arg for a in func.args.args]
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _is_sys_path_call(node):
            arg = node.args[-1] if node.args else None
            if isinstance(arg, ast.Name) and arg.id in params:
                return params.index(arg.id)
    return None


def _added_argument(call: ast.Call, helpers: dict[str, int]) -> ast.expr | None:
    if _is_sys_path_call(call):
        return call.args[-1] if call.args else None
    if isinstance(call.func, ast.Name) and call.func.id in helpers and len(call.args) > helpers[call.func.id]:
        return call.args[helpers[call.func.id]]
    return None


def _is_sys_path_call(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in ("insert", "append")
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "path"
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "sys"
    )


def _evaluate(expr: ast.expr, names: dict[str, str], path: str, depth: int = 0) -> str | None:
    """The path string ``expr`` computes, or None."""
    if depth > 8:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value if os.path.isabs(expr.value) else os.path.join(os.path.dirname(os.path.abspath(path)), expr.value)
    if isinstance(expr, ast.Name):
        return names.get(expr.id)
    if isinstance(expr, ast.Call) and not expr.keywords:
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name not in _PATH_FUNCTIONS:
            return None
        # a string after the first argument of `join` is a path part, anything else a path
        args = [a.value if name == "join" and i and _is_plain_string(a) else _evaluate(a, names, path, depth + 1) for i, a in enumerate(expr.args)]
        if not args or any(a is None for a in args):
            return None
        if name == "join":
            return os.path.join(*args)
        if len(args) != 1:
            return None
        return os.path.dirname(args[0]) if name == "dirname" else os.path.normpath(args[0])
    return None


def _is_plain_string(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str)
