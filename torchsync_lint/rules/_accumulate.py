"""TSL101's fix: turn a per-step `total += t.item()` accumulator into a device accumulator.

    total = 0.0                        total = 0.0
    for x, y in loader:                for x, y in loader:
        ...                     ->         ...
        total += loss.item()               total += loss.detach().double()
    print(total / n)                   print(float(total) / n)

The fix is offered only when the whole life of the name is visible and matches that shape;
see the rule's `## Fix safety` for the exact conditions and why values and types stay equal.
"""

from __future__ import annotations

import re

import libcst as cst

from torchsync_lint import suppress
from torchsync_lint.analysis.tree import SCOPE_TYPES
from torchsync_lint.types import Applicability, Fix

TITLE = "Accumulate on the device; read the total once after the loop"
_MPS = re.compile(r"""["']mps(?::\d+)?["']|\bbackends\.mps\b""")

# Methods whose result has an integer (or bool) dtype whatever they are given.
_INTEGER_METHODS = frozenset({"long", "int", "short", "bool", "byte", "char", "argmax", "argmin", "count_nonzero"})
_BOOL_METHODS = frozenset({"eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not", "logical_xor", "any", "all", "isin"})
_SAME_DTYPE_METHODS = frozenset({"sum", "nansum", "detach", "clone", "contiguous", "squeeze", "flatten", "view", "reshape", "abs", "cumsum"})
_INTEGER_FUNCTIONS = frozenset({"torch.argmax", "torch.argmin", "torch.count_nonzero"} | {f"torch.{m}" for m in _BOOL_METHODS})


def accumulate_fix(rule, call: cst.Call) -> Fix | None:
    """The fix for the `.item()` read ``call``, or None when any condition does not hold."""
    analysis = rule.analysis
    index = analysis.index
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args):
        return None  # only `.item()` has a device-side equivalent that keeps the value exactly
    aug = index.parent(call)
    if not _is_accumulate(aug, call):
        return None
    name = aug.target.value
    loop = _innermost_loop(index, aug)
    if loop is None or loop not in analysis.hot.hot_loops:
        return None  # nested in a function, a comprehension's loop, or a loop that is not per step
    block = index.parent(loop)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    scope = index.scope_of(loop)
    refs = _references(index, scope, name)
    if refs is None:
        return None  # the name is used in a nested function, class, `global` or `del`
    init = _initializer(block, loop, name)
    if init is None:
        return None
    integer = isinstance(_literal(init.value), cst.Integer)
    accumulations: list[cst.AugAssign] = []
    reads: list[cst.Name] = []
    for ref, is_store in refs:
        parent = index.parent(ref)
        if ref is init.targets[0].target:
            continue
        if index.inside(ref, loop):
            if not (isinstance(parent, cst.AugAssign) and parent.target is ref and _is_accumulate(parent, parent.value)):
                return None  # the loop reads or rebinds the total: it must stay a Python number
            accumulations.append(parent)
            continue
        if is_store or not _after(index, ref, loop):
            return None  # another binding, or a read before the loop
        if rule.hot(ref) is not None or _in_debug_fstring(index, ref):
            return None  # a read that is itself per step would only move the sync
        reads.append(ref)
    for acc in accumulations:
        receiver = acc.value.func.value
        if not analysis.is_device(receiver):
            return None  # `.item()` of a value we cannot place: keep it
        if integer and not _integer_valued(analysis, receiver):
            return None  # `0 + t.item()` is an int only when t has an integer dtype
        if _suppressed(rule, acc):
            return None  # the user kept this read on purpose
    if _shadows_builtin(index, scope, "int" if integer else "float"):
        return None
    if not integer and _MPS.search(analysis.source):
        return None  # the script may run on Apple MPS, which has no float64: `.double()` raises
    cast = "int" if integer else "float"
    convert = ".detach().long()" if integer else ".detach().double()"
    edits = [rule.edit(acc.value, rule.code_for(acc.value.func.value) + convert) for acc in accumulations]
    edits += [rule.edit(ref, f"{cast}({name})") for ref in reads]
    edits.sort(key=lambda e: (e.line, e.column))
    return rule.make_fix(*edits, applicability=Applicability.UNSAFE, title=TITLE)


def _is_accumulate(aug: cst.CSTNode | None, call: cst.CSTNode) -> bool:
    """`name += <expr>.item()`, the read being the whole right-hand side."""
    return (
        isinstance(aug, cst.AugAssign)
        and isinstance(aug.operator, cst.AddAssign)
        and isinstance(aug.target, cst.Name)
        and aug.value is call
        and isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "item"
        and not call.args
    )


def _innermost_loop(index, node: cst.CSTNode) -> cst.For | cst.While | None:
    child = node
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(anc, (cst.For, cst.While)):
            return anc if child is anc.body else None  # the `else:` clause runs once, not per step
        child = anc
    return None


def _literal(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The numeric literal of `0`, `0.0`, `-1.5` (None for anything else)."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    return value if isinstance(value, (cst.Integer, cst.Float)) else None


def _initializer(block, loop, name: str) -> cst.Assign | None:
    """`name = <number>` as a statement of the loop's own block, before the loop."""
    body = list(block.body)
    position = next((i for i, stmt in enumerate(body) if stmt is loop), None)
    if position is None:
        return None
    for stmt in reversed(body[:position]):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                if len(small.targets) == 1 and _literal(small.value) is not None:
                    return small
                return None
    return None


def _references(index, scope, name: str) -> list[tuple[cst.Name, bool]] | None:
    """Every use of ``name`` in ``scope`` as (node, is_store); None when one is out of reach
    of a local rewrite (nested scopes, `global`, `del`, imports, parameters, patterns).
    Read off the module's walk (source order), not a second traversal."""
    tree = index.tree
    if isinstance(scope, cst.Module):
        nodes = tree.subtree(scope)
    else:
        if any(p.name.value == name for p in (*scope.params.params, *scope.params.posonly_params, *scope.params.kwonly_params)):
            return None
        nodes = tree.subtree(scope.body)
    out = []
    for node in nodes:
        node_type = type(node)
        if node_type is cst.Global or node_type is cst.Nonlocal:
            if any(n.name.value == name for n in node.names):
                return None
            continue
        if node_type is not cst.Name or node.value != name:
            continue
        parent = index.parent(node)
        if (type(parent) is cst.Attribute and parent.attr is node) or (type(parent) is cst.Arg and parent.keyword is node):
            continue  # `x.total` is an attribute and `f(total=...)` a parameter, not the name
        if _in_nested_scope(index, node, scope):
            return None
        kind = _context(index, node)
        if kind is None:
            return None
        out.append((node, kind == "store"))
    return out


def _in_nested_scope(index, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    for ancestor in index.ancestors(node):
        if ancestor is scope:
            return False
        if type(ancestor) in SCOPE_TYPES:
            return True
    return False


_STORE_PARENTS = (cst.AssignTarget, cst.Del, cst.AsName, cst.MatchAs, cst.MatchStar, cst.MatchMapping, cst.ImportAlias, cst.Param, cst.NameItem)


def _context(index, ref: cst.Name) -> str | None:
    """"load", "store", or None for a binding we do not rewrite around (imports, defs...)."""
    node, parent = ref, index.parent(ref)
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.ImportFrom, cst.Param, cst.NameItem)):
        return None
    while isinstance(parent, (cst.Tuple, cst.List, cst.StarredElement, cst.Element)):
        node, parent = parent, index.parent(parent)
    if isinstance(parent, _STORE_PARENTS):
        return None if isinstance(parent, (cst.Del, cst.MatchAs, cst.MatchStar, cst.MatchMapping)) else "store"
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)) and getattr(parent, "target", None) is node:
        return "store"
    return "load"


def _after(index, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """``node`` starts after ``loop`` ends (the loop has finished when it runs)."""
    return index.tree.after(node, loop)


def _in_debug_fstring(index, ref: cst.Name) -> bool:
    """`f"{total=}"` prints the expression's text: rewriting it would change the output."""
    for anc in index.ancestors(ref):
        if isinstance(anc, cst.FormattedStringExpression) and anc.equal is not None:
            return True
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


def _suppressed(rule, acc: cst.AugAssign) -> bool:
    codes = rule.analysis.extension("suppressed-comments", lambda a: suppress.comment_codes(a.source))
    index = rule.analysis.index
    lines = suppress.statement_lines(acc, index.parents, index.positions)
    return any(suppress.matches(rule.code, codes.get(line, set())) for line in lines)


def _shadows_builtin(index, scope, builtin: str) -> bool:
    """A local or module-level binding of `float`/`int` would change what the cast does."""
    module = next((a for a in (scope, *index.ancestors(scope)) if isinstance(a, cst.Module)), scope)
    return builtin in index.imports.aliases or any(builtin in index.defs.get(s, {}) for s in {scope, module})


def _integer_valued(analysis, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Provably an integer or bool tensor: comparisons, counts, `argmax`, `.long()`..."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _integer_valued(analysis, expr.expression, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _integer_valued(analysis, expr.left, depth + 1) and _integer_valued(analysis, expr.right, depth + 1)
    if isinstance(expr, cst.Call):
        if any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args):
            return False  # `t.sum(dtype=torch.float32)`
        qualname = analysis.qualname(expr.func)
        if qualname in _INTEGER_FUNCTIONS:
            return True
        if qualname == "torch.sum":
            return bool(expr.args) and _integer_valued(analysis, expr.args[0].value, depth + 1)
        if isinstance(expr.func, cst.Attribute) and qualname is None:
            method = expr.func.attr.value
            if method in _INTEGER_METHODS or method in _BOOL_METHODS:
                return True
            if method in _SAME_DTYPE_METHODS:
                return _integer_valued(analysis, expr.func.value, depth + 1)
        return False
    if isinstance(expr, cst.Name):
        defs = analysis.values.reaching_defs(expr)
        return bool(defs) and all(d.how == "assign" and d.value is not None and _integer_valued(analysis, d.value, depth + 1) for d in defs)
    return False
