"""A parameter whose value its callers fix: `def to_device(x, device, non_blocking=False):
return x.to(device, non_blocking=non_blocking)` where every call in the project passes `False`
or leaves the default, or a constructor's default stored on `self` (`self.non_blocking =
non_blocking`) that no construction overrides. The value is then what the callers give.

Unknown (and silent) when any caller passes something else than a literal (a name bound to a
literal in its own function counts as one), passes through `*args`/`**kwargs`, when the
function is used as a value (a callback, `partial(f, ...)`: who calls it then is not known), or
when there is no call site at all. A value one caller sets to `True` and another to `False` is
not fixed either.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.loader_info import known_value

_MAX_DEPTH = 3
_NOT_FIXED = (False, None)


def caller_fixed(analysis, expr: cst.BaseExpression, depth: int = 0) -> tuple[bool, object]:
    """(True, value) when every caller fixes what ``expr`` (a parameter, or `self.attr` set
    from a constructor parameter) holds to one literal ``value``; else (False, None)."""
    if depth > _MAX_DEPTH:
        return _NOT_FIXED
    values = analysis.values
    if isinstance(expr, cst.Name):
        defs = values.reaching_defs(expr)
        if len(defs) != 1 or defs[0].how != "param" or defs[0].func is None:
            return _NOT_FIXED
        return _param_fixed(analysis, defs[0].func, defs[0].param, depth)
    parts = dotted_parts(expr)
    if parts and len(parts) == 2 and parts[0] == "self":
        return _attribute_fixed(analysis, expr, parts[1], depth)
    return _NOT_FIXED


def _param_fixed(analysis, func: cst.FunctionDef, param: cst.Param, depth: int) -> tuple[bool, object]:
    index = analysis.index
    if param is func.params.star_arg or param is func.params.star_kwarg or _escapes(index, func):
        return _NOT_FIXED
    default = _value(analysis, param.default, depth) if param.default is not None else _NOT_FIXED
    seen: set = set()
    calls = index.call_sites(func)
    for call in calls:
        if any(a.star for a in call.args):
            return _NOT_FIXED
        passed = index.argument_for(call, func, param)
        found = default if passed is param.default else _value(analysis, passed, depth + 1)
        if not found[0]:
            return _NOT_FIXED
        seen.add(_key(found[1]))
    remote = analysis.env.param_literals(func, param)
    if remote is None:
        return _NOT_FIXED
    for passed in remote:
        found = default if passed is DEFAULT else (True, passed)
        if not found[0]:
            return _NOT_FIXED
        seen.add(_key(found[1]))
    if not calls and not remote:
        return _NOT_FIXED  # nobody we can see calls it
    if len(seen) != 1:
        return _NOT_FIXED
    return True, _unkey(seen.pop())


def _attribute_fixed(analysis, expr: cst.BaseExpression, attr: str, depth: int) -> tuple[bool, object]:
    """`self.attr` whose every store in its class is a literal or a parameter of `__init__`
    fixed by the constructions, and that nothing else writes (`obj.attr = v`, a subclass)."""
    index = analysis.index
    info = index.class_of(expr)
    if info is None or _written_outside(index, info, attr) or _has_subclass(index, info):
        return _NOT_FIXED
    stores = info.self_attrs.get(attr, [])
    if not stores:
        return _NOT_FIXED
    seen: set = set()
    for d in stores:
        if d.how != "assign" or d.value is None:
            return _NOT_FIXED
        found = _value(analysis, d.value, depth + 1)
        if not found[0]:
            return _NOT_FIXED
        seen.add(_key(found[1]))
    if len(seen) != 1:
        return _NOT_FIXED
    return True, _unkey(seen.pop())


# What the project view answers for a call that leaves a parameter at its default.
DEFAULT = object()


def _value(analysis, expr: cst.BaseExpression | None, depth: int) -> tuple[bool, object]:
    """A literal, a name bound only to one, or a parameter its callers fix."""
    if expr is None:
        return _NOT_FIXED
    found = known_value(analysis.values, expr)  # (literals, through names)
    if found[0]:
        return found
    return caller_fixed(analysis, expr, depth)


def _escapes(index, func: cst.FunctionDef) -> bool:
    """Is ``func`` used other than by calling it (`Engine(update)`, `partial(f, ...)`,
    `callbacks.append(self.log)`)? Then calls we cannot see may pass anything."""
    name = func.name.value
    method = func in index.class_of_method
    for node in index.nodes_of(cst.Name if not method else cst.Attribute):
        if method:
            if node.attr.value != name:
                continue
        elif node.value != name or node is func.name:
            continue
        parent = index.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            continue
        if isinstance(parent, cst.Attribute) and not method:
            continue  # `name.attr` (another object's attribute of that name)
        return True
    return False


def _written_outside(index, info, attr: str) -> bool:
    """Is an attribute named ``attr`` assigned anywhere but on `self` in ``info``'s methods?"""
    for node in index.nodes_of(cst.Attribute):
        if node.attr.value != attr or not _is_target(index, node):
            continue
        parts = dotted_parts(node)
        if not (parts and len(parts) == 2 and parts[0] == "self" and index.class_of(node) is info):
            return True
    return False


def _has_subclass(index, info) -> bool:
    name = next((n for n, c in index.classes.items() if c is info), None)
    return any(isinstance(b, cst.Name) and b.value == name for c in index.classes.values() for b in c.bases)


def _is_target(index, node: cst.CSTNode) -> bool:
    parent = index.parent(node)
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return True
    return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node


def _key(value: object):
    return (type(value).__name__, value)  # (True and 1 are different settings)


def _unkey(key):
    return key[1]

