"""Answers per instance: what a field of one object holds, from the calls made on that object.

`losses = AverageMeter()` updated with `loss.item()` and `top1 = AverageMeter()` updated with a
device tensor are two objects of one class: `losses.avg` is a float, `top1.avg` a device tensor.
A field of a local instance (a name bound to one construction of a class, in one function) is
read with the class's method parameters bound to what *this* object's calls pass: its
constructor's arguments for `__init__`, and for every other method the calls made on the same
name in that function. When the object escapes that function (passed on, stored, returned), other
calls may exist: their parameters then keep what every call site in the project passes.

For a class of this module the fields are evaluated again by an ``InstanceValues``: the same
value analysis with those bindings (a different context, so its own memo). For a class of another
module the bindings go to the project view as kinds (``Env.attribute_kind``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchsync_lint.analysis.index import ClassInfo, Def, literal_element
from torchsync_lint.analysis.kinds import Kind, join


@dataclass
class Instance:
    """One object: its construction call, and the calls made on the name holding it."""

    construction: cst.Call
    methods: dict[str, list[cst.Call]] = field(default_factory=dict)  # method name -> calls on it
    escapes: bool = False  # handed to code we do not see here: other calls may exist


class InstanceKinds:
    """Mixin of ValueAnalysis (values.py): the instance a name holds, and its fields."""

    def instance_of(self, expr: cst.BaseExpression) -> Instance | None:
        """The single object a local name holds (`meter = AverageMeter()` in this function),
        with the calls made on it; None for anything else."""
        if not isinstance(expr, cst.Name):
            return None
        defs = self.reaching_defs(expr)
        made = (defs[0].value if defs[0].how == "assign" else literal_element(defs[0]) if defs[0].how == "unpack" else None) if len(defs) == 1 else None
        if not isinstance(made, cst.Call):
            return None  # `meter = AverageMeter()`, or one element of `a, b = A(), B()`
        key = id(defs[0])
        if key not in self._instances:
            self._instances[key] = self._find_instance(defs[0], made)
        return self._instances[key]

    def _find_instance(self, d: Def, made: cst.Call) -> Instance:
        found = Instance(made)
        scope = self.index.scope_of(d.stmt)
        for node in self.index.tree.walk_subtree(scope):
            if type(node) is not cst.Name or node.value != d.name or node is d.stmt:
                continue
            parent = self.index.parent(node)
            if isinstance(parent, cst.AssignTarget):
                continue  # the binding itself (one binding: `len(defs) == 1` above)
            if d not in self.reaching_defs(node):
                continue  # another binding of the same name
            call = self.index.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is node else None
            if isinstance(call, cst.Call) and call.func is parent:
                found.methods.setdefault(parent.attr.value, []).append(call)
            elif self._moves_or_escapes(node):
                found.escapes = True
        return found

    def instance_field(self, info: ClassInfo, instance: Instance, attr: str) -> Kind | None:
        """`obj.attr` of a local instance of a class of this module."""
        root = getattr(self, "_parent", self)  # instances are read in the module's own context
        key = (id(instance.construction), id(info.node))
        child = root._instance_values.get(key)  # noqa: SLF001
        if child is None:
            child = root._instance_values[key] = _bound_class(type(root))(root, info, instance)  # noqa: SLF001
        return child.field(attr)


_BOUND: dict[type, type] = {}


def _bound_class(base: type) -> type:
    """The value analysis of one instance: ``base`` (the module's ValueAnalysis class, never
    imported here: it imports this module), with the parameters of the instance's class's
    methods bound to the calls made on the instance. Made once per base class."""
    if base not in _BOUND:

        class InstanceValues(base):  # type: ignore[misc, valid-type]
            def __init__(self, parent, info: ClassInfo, instance: Instance) -> None:
                base.__init__(self, parent.index, parent._mentions_device, parent._names_accelerator, parent.env)  # noqa: SLF001
                self.bindings = parent.bindings  # reaching definitions do not depend on the instance
                self._asked = parent._asked  # noqa: SLF001 - its questions are the module's
                self.env = parent.env
                self._parent = parent
                self._info = info
                self._instance = instance
                parent.uses_accelerator  # noqa: B018 - decided once, for the module
                self._module_facts["accelerator"] = parent._module_facts["accelerator"]  # noqa: SLF001

            def field(self, attr: str) -> Kind | None:
                kinds = self.field_kinds(self._info, attr)
                return join(kinds) if any(k is not None for k in kinds) else None

            def _param_kind(self, d: Def) -> Kind | None:
                parent = self._parent
                if parent.index.class_of_method.get(d.func) is not self._info:
                    return parent._param_kind(d)  # noqa: SLF001 - another function: as anywhere
                name = d.func.name.value
                calls = [self._instance.construction] if name == "__init__" else self._instance.methods.get(name, [])
                if not calls:
                    # never called on this object here: its parameters hold nothing for it,
                    # unless it escapes to code that may call it
                    return parent._param_kind(d) if self._instance.escapes else None  # noqa: SLF001
                kinds = parent.passed_kinds(calls, d.func, d.param)
                if kinds is None:
                    return Kind.UNKNOWN
                if self._instance.escapes:
                    kinds.append(parent._param_kind(d))  # noqa: SLF001
                return join(kinds) if any(k is not None for k in kinds) else None

        _BOUND[base] = InstanceValues
    return _BOUND[base]
