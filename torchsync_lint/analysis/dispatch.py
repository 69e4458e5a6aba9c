"""Which method a call on an instance of a class of this module runs, as Python decides it.

- ``lookup``: the class's own method, else the first base of this module (left to right,
  depth first: the method resolution order of the single and simple multiple inheritance
  training code uses) that defines it: `Trainer(...)` runs `BaseTrainer.__init__` when
  `Trainer` defines none.
- ``dispatch``: what `self.name(...)` in a method of a class may run. `self` may be an
  instance of any subclass of this module, so an override there is a candidate too (a base
  trainer's `fit` calling `self.train_step(...)`, which each subclass defines). A stub (`raise
  NotImplementedError`, `pass`, `...`, a docstring) counts only when nothing concrete exists.
"""

from __future__ import annotations

import libcst as cst

_MAX_DEPTH = 8  # inheritance chains deeper than this are not followed (cycles cannot loop)


def lookup(index, info, name: str, depth: int = 0) -> cst.FunctionDef | None:
    found = info.methods.get(name)
    if found is not None or depth >= _MAX_DEPTH:
        return found
    for base in local_bases(index, info):
        found = lookup(index, base, name, depth + 1)
        if found is not None:
            return found
    return None


def field_stores(index, info, attr: str, depth: int = 0) -> list:
    """The stores (Defs) to `self.attr` of ``info``, else of its first base of this module that
    has any: what a trainer's `self.model` holds when its base class's `__init__` stores it."""
    own = info.self_attrs.get(attr, [])
    if own or depth >= _MAX_DEPTH:
        return own
    for base in local_bases(index, info):
        found = field_stores(index, base, attr, depth + 1)
        if found:
            return found
    return []


def local_bases(index, info) -> list:
    """The bases of ``info`` that are top-level classes of this module (by name)."""
    out = []
    for base in info.bases:
        local = index.classes.get(base.value) if type(base) is cst.Name else None
        if local is not None and local is not info:
            out.append(local)
    return out


def subclasses(index, info) -> list:
    """The classes of this module that derive from ``info``, directly or not (source order);
    asked for every `self.name(...)` call, so computed once per class."""
    memo = index._subclasses  # noqa: SLF001 - the index's memo for this module's queries
    if id(info) not in memo:
        memo[id(info)] = _subclasses(index, info)
    return memo[id(info)]


def _subclasses(index, info) -> list:
    found, frontier = [], [info]
    while frontier:
        current = frontier.pop()
        for other in index.classes.values():
            if other not in found and other is not info and current in local_bases(index, other):
                found.append(other)
                frontier.append(other)
    order = list(index.classes.values())
    return sorted(found, key=order.index)


def dispatch(index, info, name: str) -> list[cst.FunctionDef]:
    candidates = []
    for func in [lookup(index, info, name), *(lookup(index, sub, name) for sub in subclasses(index, info))]:
        if func is not None and func not in candidates:
            candidates.append(func)
    concrete = [f for f in candidates if not is_stub(f)]
    return concrete or candidates


def is_stub(func: cst.FunctionDef) -> bool:
    """A body that does nothing but fail or pass: an abstract method's placeholder."""
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else [func.body]
    if any(_is_abstract_decorator(d.decorator) for d in func.decorators):
        return True
    for stmt in body:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else None
        if small is None:
            return False
        for part in small:
            if isinstance(part, cst.Pass):
                continue
            if isinstance(part, cst.Expr) and isinstance(part.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(part, cst.Raise) and _raises_not_implemented(part):
                continue
            return False
    return True


def _raises_not_implemented(node: cst.Raise) -> bool:
    exc = node.exc
    if isinstance(exc, cst.Call):
        exc = exc.func
    return isinstance(exc, cst.Name) and exc.value == "NotImplementedError"


def _is_abstract_decorator(expr: cst.BaseExpression) -> bool:
    last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return last == "abstractmethod"
