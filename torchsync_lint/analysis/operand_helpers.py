"""Helpers that compute where their operands are (part of ValueAnalysis, through CallKinds):
a function of tensor arithmetic on its parameters alone (no copy, no `device=`, no state of
`self` or of the module) returns its results where torch computes them, with its operands. So
`iou(boxes.cpu(), anchors)` is a host tensor even when another call of the same helper hands it
device tensors: the call's own arguments decide, not the join over every caller."""

from __future__ import annotations

import builtins

import libcst as cst

from torchsync_lint.analysis.kinds import DEVICE_VALUES, Kind
from torchsync_lint.knowledge import torch as tk

_BUILTIN_NAMES = frozenset(dir(builtins))


class OperandHelpers:
    def _given_host_tensors(self, call: cst.Call) -> bool:
        """Does ``call`` pass a host tensor and nothing known to be on the device?"""
        kinds = {self._eval(a.value) for a in call.args}
        return Kind.HOST_TENSOR in kinds and kinds.isdisjoint(DEVICE_VALUES | {Kind.MOVED, Kind.PREPARED, Kind.MODEL})

    def _places_like_operands(self, func: cst.FunctionDef) -> bool:
        """A helper of tensor arithmetic on its parameters alone: no copy or `device=`, no
        attribute of `self`, no global value or project call (only imports, builtins, its
        parameters and locals). Torch computes such a function's results where its operands
        are: given host tensors, it returns host values, whatever other callers pass."""
        if func not in self._operand_helpers:
            self._operand_helpers[func] = self._only_operands(func)
        return self._operand_helpers[func]

    def _casts_in_place(self, method: cst.Attribute) -> bool:
        """`x.type(y.type())`, `x.to(y.dtype)`, `x.to(torch.float16)`, `y.type()`: a cast or a
        type's name, not a move."""
        call = self.index.parent(method)
        if not isinstance(call, cst.Call) or call.func is not method or method.attr.value not in ("to", "type"):
            return False
        for arg in call.args:
            value = arg.value
            if arg.keyword is not None and arg.keyword.value != "dtype":
                return False
            if isinstance(value, cst.Attribute) and (value.attr.value == "dtype" or (self.qualname(value) or "").rsplit(".", 1)[-1] in tk.DTYPE_NAMES):
                continue
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "type" and not value.args:
                continue
            return False
        return True

    def _only_operands(self, func: cst.FunctionDef) -> bool:
        bound = func in self.index.class_of_method
        own = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
        for node in self.index.tree.walk_subtree(func.body):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False  # (nested scopes: not followed)
            if isinstance(node, cst.Attribute) and node.attr.value in tk.COPY_METHODS | {"device", "cpu", "numpy"} and not self._casts_in_place(node):
                return False
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
                return False
            if isinstance(node, cst.Attribute) and bound and isinstance(node.value, cst.Name) and node.value.value == "self":
                return False
            if isinstance(node, cst.Name) and node.value not in own and not _is_binding_name(self.index, node):
                qn = self.qualname(node)
                if qn is not None:
                    if not qn.startswith(("torch.", "numpy.", "math.")) and qn not in ("torch", "numpy", "math"):
                        return False  # a project function or class, another library's
                    continue
                defs = self.reaching_defs(node)
                if defs:
                    if any(self.index.scope_of(d.stmt) is not func for d in defs):
                        return False  # a value from outside (a global, a closure's)
                elif node.value not in _BUILTIN_NAMES:
                    return False  # a module-level name we cannot see bound
        return True


def _is_binding_name(index, name: cst.Name) -> bool:
    """A name that is not read: an attribute's, a keyword's, a target's (walk_subtree visits them)."""
    parent = index.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return True
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return True
    return isinstance(parent, (cst.AssignTarget, cst.Param, cst.AsName, cst.ImportAlias))
