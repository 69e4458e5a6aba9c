"""How one module names the project code it calls, in terms the project view resolves.

Shared by the module's summary (what other modules learn about it) and by its environment during
linting (which of its calls run a training step elsewhere), so both name a call the same way:

- a dotted import name as written (`proj.data.make_loader`, `.engine.f`, or the class of an
  object made by an imported call followed by the method: `op.rl.Policy.train`);
- `:Qual` for this module's own function or method;
- `^<ref>#<i>.<method>` for a method of what callers pass for parameter ``i`` of a function;
- `~<ref of a class>.<attr>` for the object or function stored on `self.<attr>`, called
  (`self.criterion(out, y)`), and `~<ref>.<attr>.<method>` for one of its methods
  (`self.buffer.sample(n)`);
- `@<ref of a class>.<method>` for `self.<method>(...)` that the class inherits from a project
  base (and, like every call on `self`, that a subclass may override: see ``dispatch``);
- `!<ref of a class>.<method>` for `super().<method>(...)`: the method its bases define;
- `*Name` for a name that may come from one of the module's `from m import *`;
- `%` (written by summary.py, not here) for a call of a value picked by the config
  (`ARCHS[name](cfg)`, `getattr(losses, name)()`), the value on the call record.
"""

from __future__ import annotations

import builtins

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import param_index
from torchsync_lint.knowledge import libraries

# Imports of these never name a project module: their calls are not recorded.
LIBRARY_ROOTS = libraries.LIBRARY_ROOTS
_NOT_YET = object()


def local_qualname(index, node: cst.CSTNode) -> str | None:
    """`f`, `Class`, `Class.method` for top-level definitions, `f.<locals>.g` for a function
    defined in a function (a closure handed on as a value: `Trainer(get_batch=get_batch)`);
    None for other nested definitions."""
    kind = type(node)  # exact types (analysis/tree.exact_types)
    if kind is cst.ClassDef:
        info = index.classes.get(node.name.value)
        return node.name.value if info is not None and info.node is node else None
    if kind is cst.FunctionDef:
        if index.functions.get(node.name.value) is node:
            return node.name.value
        info = index.class_of_method.get(node)
        if info is not None:
            owner = local_qualname(index, info.node)
            return f"{owner}.{node.name.value}" if owner else None
        outer = index.enclosing_function(node)
        if outer is not None and index.scope_of(node) is outer:
            owner = local_qualname(index, outer)
            if owner is not None and sum(1 for d in index.defs.get(outer, {}).get(node.name.value, []) if d.stmt is not node and isinstance(d.stmt, cst.FunctionDef)) == 0:
                return f"{owner}.<locals>.{node.name.value}"
    return None


class CalleeNames:
    def __init__(self, analysis, relpath: str) -> None:
        self.index = analysis.index
        self.values = analysis.values
        self.relpath = relpath
        self._quals: dict[cst.CSTNode, str | None] = {}
        self._callees: dict[cst.Call, str | None] = {}  # the summary asks per function and per call

    def qual(self, node: cst.CSTNode) -> str | None:
        found = self._quals.get(node, _NOT_YET)  # (one lookup: a node's hash is a Python call)
        if found is _NOT_YET:
            found = self._quals[node] = local_qualname(self.index, node)
        return found

    def ref(self, node: cst.CSTNode) -> str | None:
        qual = self.qual(node)
        return f"{self.relpath}:{qual}" if qual else None

    def site(self, call: cst.Call) -> str:
        return f"{self.relpath}@{self.index.seq(call)}"

    def callee(self, call: cst.Call) -> str | None:
        """The name the project view resolves ``call``'s callee by, when it may be the
        project's own code (never a library's)."""
        found = self._callees.get(call, _NOT_YET)
        if found is _NOT_YET:
            found = self._callees[call] = self._callee(call)
        return found

    def _callee(self, call: cst.Call) -> str | None:
        func = call.func
        target = self.index.target_of(call)
        if target is not None:
            qual = self.qual(target)
            return f":{qual}" if qual else None  # this module's own function: `:Class.method`
        qn = self.values.qualname(func)
        kind = type(func)
        if qn is None and kind is cst.Attribute and self._is_super(func.value):
            cls = self.index.class_of(call)
            ref = self.ref(cls.node) if cls is not None else None
            return f"!{ref}.{func.attr.value}" if ref is not None else None  # `super().__init__(...)`
        if qn is None and kind is cst.Attribute:
            origin = self.values.origin_qualname(func.value)
            if origin:
                qn = f"{origin}.{func.attr.value}"
            else:
                qn = self._stored_receiver(func.value, func.attr.value) or self._stored_receiver(func, "") or self._param_receiver(func.value, func.attr.value)
            if qn is None and self.dispatch(call) is not None:
                qn = f"@{self.dispatch(call)}"  # `self.train_step()` a project base class defines
        elif qn is None and kind is cst.Name:
            origin = self.values.origin_qualname(func)  # `compute_loss(p, t)`, an instance called
            qn = f"{origin}.__call__" if origin else (self._param_receiver(func, "__call__") or self._star_name(func))
        if qn is None:
            return None
        if qn.startswith(("^", "~", "@")):
            return qn
        root = qn.split(".", 1)[0]
        return qn if qn.startswith(".") or root not in LIBRARY_ROOTS else None

    def _is_super(self, expr: cst.BaseExpression) -> bool:
        """`super()` / `super(Cls, self)`, Python's own."""
        return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "super" and not self.index.binds_locally("super", expr.func)

    def dispatch(self, call: cst.Call) -> str | None:
        """"<ref of the class>.<method>" when ``call`` is `self.<method>(...)` in a method of a
        top-level class: a subclass's override may be what runs (the view follows it)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return None
        defs = self.values.reaching_defs(func.value)
        if len(defs) != 1 or defs[0].how != "param" or param_index(defs[0].func, defs[0].param) != 0:
            return None
        info = self.index.class_of_method.get(defs[0].func)
        if info is None or func.attr.value in info.self_attrs and func.attr.value not in info.methods:
            return None
        ref = self.ref(info.node)
        return f"{ref}.{func.attr.value}" if ref is not None else None

    def bound(self, call: cst.Call, callee: str) -> bool:
        """Does Python fill the callee's first parameter itself (`obj.method(...)`, `obj(...)`)?"""
        if callee.startswith(("^", "~", "@", "!")):
            return True  # a method of the object passed or stored, or of `self` (the view checks)
        if callee.startswith(":"):
            target = self.index.target_of(call)
            return target is not None and self.index._bound_arguments(call, target) == 1  # noqa: SLF001
        return self.values.qualname(call.func) is None

    def _star_name(self, name: cst.Name) -> str | None:
        """`*Name`: a name bound by none of this module's statements that may come from one of
        its `from m import *` (the view looks it up in those modules)."""
        if not self.index.imports.star_imports or self.values.reaching_defs(name) or hasattr(builtins, name.value):
            return None
        return f"*{name.value}"

    def _param_receiver(self, receiver: cst.BaseExpression, method: str) -> str | None:
        """`criterion(out, y)` / `model.detect(x)` where the object is a parameter: the view
        looks up what callers pass for it (`^<function ref>#<index>.<method>`)."""
        if not isinstance(receiver, cst.Name):
            return None
        defs = self.values.reaching_defs(receiver)
        if len(defs) != 1 or defs[0].how != "param":
            return None
        ref = self.ref(defs[0].func)
        index = param_index(defs[0].func, defs[0].param)
        if index == 0 and defs[0].func in self.index.class_of_method:
            return None  # `self`: its methods are this module's own
        return f"^{ref}#{index}.{method}" if ref is not None and index is not None else None

    def _stored_receiver(self, receiver: cst.BaseExpression, method: str) -> str | None:
        """`self.criterion(...)` (``method`` empty) / `self.buffer.sample(...)`: the value a
        method of a top-level class stores on `self.<attr>` (the view follows it to what its
        constructor was given)."""
        parts = dotted_parts(receiver)
        if not parts or len(parts) != 2 or parts[0] != "self":
            return None
        info = self.index.class_of(receiver)
        if info is None or parts[1] not in info.self_attrs or parts[1] in info.methods:
            return None
        ref = self.ref(info.node)
        return f"~{ref}.{parts[1]}" + (f".{method}" if method else "") if ref is not None else None
