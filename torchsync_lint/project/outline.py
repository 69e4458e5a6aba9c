"""What a module imports and exports at run time, from Python's `ast` alone (no libcst, no
summary): the demand-driven project view (project/demand.py) reads it to know which modules
an answer may need before any of them is summarised.

An outline holds, for one module's text:

- ``defines``: the names its top level binds itself (def, class, assignment, loop targets...):
  a name asked of the module stops here;
- ``binds``: name -> the import name a top-level import statement binds it to (`from .a import
  f as g`: g -> ".a.f"; `import a.b`: a -> "a"), imports under `if TYPE_CHECKING:` left out
  (they never run);
- ``lazy``: name -> the import name a `_LazyModule`-style import structure says it comes from
  (`_import_structure = {"models": ["X"]}`, and the `_import_structure["sub"] = [...]` /
  `.extend([...])` / `.append("X")` statements that grow it): the name is imported when first
  read, from that submodule, and only then;
- ``demands``: every import name the module's code may run (top level, in functions, in
  classes; never under `if TYPE_CHECKING:`): `from a import b` demands "a.b" (a name of `a`,
  or its submodule); `import a.b as m` demands, for each `m.x.y` the code reads, "a.b.x.y":
  a package imported whole is asked only for the names its importer uses;
- ``stars``: the modules of its run-time `from m import *`.

A structure that is not a literal (a dict built by a call, a comprehension) adds nothing: the
names it would export stay unknown, so silent.
"""

from __future__ import annotations

import ast

from torchsync_lint.pytree import parse_tree

OUTLINE_VERSION = 1
_LAZY_CALLS = ("_LazyModule", "LazyModule", "_LazyLoader")  # (the call a lazy package's structure is handed to)


def outline(text: str | None) -> dict:
    """The outline of a module's ``text`` (an empty one when it does not parse)."""
    out = {"defines": [], "binds": {}, "lazy": {}, "demands": [], "stars": []}
    try:
        tree = parse_tree(text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is None:
        return out
    defines: set[str] = set()
    binds: dict[str, str] = {}
    demands: list[str] = []
    stars: list[str] = []
    plain: dict[str, str] = {}  # name bound by `import a.b [as m]` -> the module it stands for
    _top_level(tree.body, defines, binds, stars)
    for node in _runtime_nodes(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:  # (the names read through it are the demands: _attribute_demands)
                local = alias.asname or alias.name.split(".")[0]
                plain[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                demands.append(base if alias.name == "*" else join_name(base, alias.name))
    demands += _attribute_demands(tree, plain)
    lazy = _lazy_structure(tree) if any(call in text for call in _LAZY_CALLS) else {}  # (no such call: no structure; a whole walk saved)
    out.update(defines=sorted(defines), binds=binds, lazy=lazy, demands=sorted(set(demands)), stars=stars)
    return out


def join_name(base: str, name: str) -> str:
    return f"{base}{name}" if base.endswith(".") or not base else f"{base}.{name}"


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:` (what never runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level(body: list[ast.stmt], defines: set[str], binds: dict[str, str], stars: list[str]) -> None:
    """The names the module's top level binds (through blocks: try, if, with), its own or
    imported; the first import of a name in the text wins, as `try: from a import f / except:
    ...` runs. (A stack, in the order of the text: an elif chain nests as deep as it is long.)"""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(reversed(node.orelse))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                binds.setdefault(local, alias.name if alias.asname else local)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    stars.append(base)
                else:
                    binds.setdefault(alias.asname or alias.name, join_name(base, alias.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defines.add(node.name)
        else:
            for target in _targets(node):
                defines.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            inner: list[ast.stmt] = []
            for field in ("body", "handlers", "orelse", "finalbody"):
                for part in getattr(node, field, None) or ():
                    if isinstance(part, ast.ExceptHandler):
                        inner.extend(part.body)
                    elif isinstance(part, ast.stmt):
                        inner.append(part)
            stack.extend(reversed(inner))


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def _runtime_nodes(body: list[ast.stmt]):
    """Every statement under ``body`` (functions and classes too) but those under
    `if TYPE_CHECKING:`."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(reversed(node.orelse))
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                stack.extend(reversed([s for s in inner if isinstance(s, (ast.stmt, ast.ExceptHandler, getattr(ast, "match_case", ast.stmt)))]))


def _attribute_demands(tree: ast.Module, plain: dict[str, str]) -> list[str]:
    """For each name a plain `import` binds, the dotted names the code reads through it
    (`diffusers.utils.logging` of `import diffusers`): the names asked of that module; the
    module itself where the code uses the name bare (passes the module on). (ast.walk visits an
    attribute before the names inside it: those are marked as read through it first.)"""
    if not plain:
        return []
    out: set[str] = set()
    inside: set[int] = set()  # ids of the nodes of a chain already read from its outermost attribute
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inside:
            parts: list[str] = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
                inside.add(id(inner))
            if isinstance(inner, ast.Name) and inner.id in plain:
                out.add(".".join([plain[inner.id], *reversed(parts)]))
        elif isinstance(node, ast.Name) and node.id in plain and id(node) not in inside and isinstance(node.ctx, ast.Load):
            out.add(plain[node.id])  # the module itself handed on (`getattr(dataloaders, name)`): all of it may be read
    return sorted(out)


def _lazy_structure(tree: ast.Module) -> dict[str, str]:
    """name -> ".sub.name" from the module's `_LazyModule` import structure (the dict literal
    handed to the call, and the statements that grow it), {} when there is none."""
    handed = {arg.id for node in ast.walk(tree) if isinstance(node, ast.Call) and _callee_name(node.func) in _LAZY_CALLS for arg in node.args if isinstance(arg, ast.Name)}
    if not handed:
        return {}
    lazy: dict[str, str] = {}

    def add(sub: ast.expr, names: ast.expr) -> None:
        if not (isinstance(sub, ast.Constant) and isinstance(sub.value, str)):
            return
        items = names.elts if isinstance(names, (ast.List, ast.Tuple)) else [names]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value.isidentifier():
                lazy.setdefault(item.value, f".{sub.value}.{item.value}")

    for node in _runtime_nodes(tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in handed for t in targets):
                for key, value in zip(node.value.keys, node.value.values):
                    if key is not None:
                        add(key, value)
        elif isinstance(node, ast.Assign):  # `_import_structure["sub"] = ["X"]`
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in handed:
                    add(t.slice, node.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # `_import_structure["sub"].extend([...])`
            call = node.value
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("extend", "append") and call.args:
                owner = func.value
                if isinstance(owner, ast.Subscript) and isinstance(owner.value, ast.Name) and owner.value.id in handed:
                    add(owner.slice, call.args[0])
            elif isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name) and func.value.id in handed and call.args and isinstance(call.args[0], ast.Dict):
                for key, value in zip(call.args[0].keys, call.args[0].values):
                    if key is not None:
                        add(key, value)
    return lazy


def _callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def valid_outline(value) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("defines"), list)
        and isinstance(value.get("binds"), dict)
        and isinstance(value.get("lazy"), dict)
        and isinstance(value.get("demands"), list)
        and isinstance(value.get("stars"), list)
    )
