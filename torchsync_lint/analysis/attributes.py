"""What an attribute holds: `x.__class__`, `torch.float16`, `self.attr` (from what the class
assigns to it), `meter.val` of a local class instance, `out.logits` of a device value, library
attributes (knowledge tables) and project symbols (``self.env``). Part of ValueAnalysis
(values.py), which provides ``_eval``, ``_def`` and ``qualname``."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.kinds import HOST_KINDS, Kind, join
from torchsync_lint.knowledge import python, registry
from torchsync_lint.knowledge import torch as torch_knowledge


class AttributeKinds:
    # -- attributes -----------------------------------------------------------------------
    def _attribute(self, node: cst.Attribute) -> Kind | None:
        attr = node.attr.value
        if attr.startswith("__") and attr.endswith("__"):
            return Kind.HOST  # `x.__class__`, `obj.__dict__`, `cls.__name__`: Python's own data
        qn = self.qualname(node)
        if qn is not None:
            return self._qualified_value(qn, node)
        parts = dotted_parts(node)
        if parts and len(parts) == 2 and parts[0] == "self":
            return self._self_attr(node, parts[1])
        return self.attribute_of(node.value, attr)

    def attribute_of(self, base_expr: cst.BaseExpression, attr: str) -> Kind | None:
        """The kind of `base_expr.attr` (also for attributes named in a format string)."""
        if attr in torch_knowledge.HOST_ATTRIBUTES or (attr.startswith("__") and attr.endswith("__")):
            return Kind.HOST
        base = self._eval(base_expr)
        if attr in torch_knowledge.SAME_VALUE_ATTRIBUTES:
            return Kind.DEVICE if base is Kind.MOVED else base
        if base is Kind.DEVICE or base is Kind.CONTAINER:
            return Kind.DEVICE  # fields of a model output (`out.logits`, `out.loss` of a dict-like output)
        if base in HOST_KINDS:
            return base
        if attr in torch_knowledge.WRAPPED_MODULE_ATTRIBUTES and base in (Kind.MODEL, Kind.CPU_MODEL, Kind.MOVED):
            return Kind.CPU_MODEL if base is Kind.CPU_MODEL else Kind.MODEL  # `model.module` of a DataParallel
        stored = self._stored_on(base_expr, attr)
        if stored is Kind.DEVICE or stored is Kind.CONTAINER:
            return stored  # `ctx.running = loss` earlier in this function, then `ctx.running.item()`
        if isinstance(base_expr, cst.Name):
            cls = self.index._instance_class(self.reaching_defs(base_expr))  # noqa: SLF001
            if cls is not None and attr in cls.self_attrs:
                # `meter.val`, where `meter = AverageMeter()` of this module stores what
                # `meter.update(v)` is given: what *this* meter's calls give (instances.py)
                instance = self.instance_of(base_expr)
                if instance is not None:
                    return self.instance_field(cls, instance, attr)
                return join(self.field_kinds(cls, attr))
        origin = self.origin_qualname(base_expr)
        if origin is not None:
            known = registry.attribute_returns(origin, attr)  # `scheduler.sigmas`: a CPU table
            if known is not None:
                return self._library_result(known, None)
            stored = registry.stored_field(origin, attr)
            instance = self.instance_of(base_expr) if stored is not None else None
            if instance is not None:  # `norm_meter.val` of timm's AverageMeter: what its update got
                method, position = stored
                args = [[a.value for a in call.args if a.keyword is None][position:position + 1] for call in instance.methods.get(method, [])]
                return join(self._eval(a[0]) for a in args if a) if any(args) else Kind.UNKNOWN
        remote = self.env.attribute_kind(base_expr, attr, self)
        return remote if remote is not None else Kind.UNKNOWN  # a model's submodule or parameter, or unknown

    def _stored_on(self, base_expr: cst.BaseExpression, attr: str) -> Kind | None:
        """What this function stores on `name.attr` (a name other than `self`), joined."""
        if not isinstance(base_expr, cst.Name):
            return None
        values = self.index.attr_stores.get((self.index.scope_of(base_expr), base_expr.value, attr))
        return join(self._eval(v) for v in values) if values else None

    def _qualified_value(self, qn: str, node: cst.Attribute) -> Kind:
        if qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in torch_knowledge.DTYPE_NAMES:
            return Kind.HOST
        if python.makes_no_device_tensor(qn):
            return Kind.HOST  # `math.pi`, `sys.maxsize`: a standard-library module's Python value
        remote = self.env.symbol_kind(qn)
        return remote if remote is not None else Kind.UNKNOWN

    def field_kinds(self, info, attr: str) -> list[Kind | None]:
        """What the stores of class ``info`` to `self.attr` hold, one kind per store; a CPU
        model stored on an object counts as a model, which its owner may move."""
        return [Kind.MODEL if k is Kind.CPU_MODEL else k for k in (self._def(d) for d in info.self_attrs.get(attr, ()))]

    def _self_attr(self, node: cst.CSTNode, attr: str) -> Kind | None:
        info = self.index.class_of(node)
        if info is None:
            return Kind.UNKNOWN
        if attr == "device":
            return Kind.HOST
        kinds = self.field_kinds(info, attr)
        if not kinds:
            inherited = self._inherited_field(info, attr)
            return inherited if inherited is not None else Kind.UNKNOWN
        return join(kinds)

    def _inherited_field(self, info, attr: str, depth: int = 0) -> Kind | None:
        """`self.attr` that a base class stores: a class of this module (its own stores, else
        its bases'), or a project class it imports (the project's answer)."""
        for base in info.bases:
            local = self.index.classes.get(base.value) if isinstance(base, cst.Name) and depth < 5 else None
            if local is not None and local is not info:
                kinds = self.field_kinds(local, attr)
                found = join(kinds) if kinds else self._inherited_field(local, attr, depth + 1)
                if found is not None:
                    return found
        return self.env.inherited_attribute_kind(info.node, attr)
