"""Is an expression a mask: a tensor of dtype bool (or uint8, which indexing reads as a mask)?

The question TSL105 asks of an index (`x[mask]`), answered from dtype evidence only: where the
value lives is the value analysis's question (analysis/values.py), asked by the rule. Evidence:
a comparison (`x > 0`, `torch.ge(a, b)`), a logical op (`~m`, `m1 & m2`), a mask dtype
(`dtype=torch.bool`, `.bool()`, `.byte()`, `torch.zeros(n, dtype=torch.uint8)`), methods that
keep the dtype of a mask (`m.to(device)`, `m.reshape(-1)`, `m[0, :]`), and, through the code,
names (their reaching assignments), `self.<attr>` stored in the class's methods, what a
same-module function returns (`self.mask = self.make_mask(n)`), what a project function of
another module returns (its summary's "mask" field, through the project view: env.call_mask),
and a parameter every same-module call site passes a mask for. Anything else is not a mask:
an integer index (`torch.arange`, `argmax`) is a gather with a static size.

The answer is the mask's dtype, "bool" or "uint8", or None. Tables are in knowledge/masks.py.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import param_index
from torchsync_lint.knowledge import masks as mk
from torchsync_lint.knowledge import torch as torch_knowledge

_MAX_DEPTH = 12
_IDENTITY = (cst.Is, cst.IsNot, cst.In, cst.NotIn)
_LOGICAL = (cst.BitAnd, cst.BitOr, cst.BitXor)
_LOGICAL_AUG = (cst.BitAndAssign, cst.BitOrAssign, cst.BitXorAssign)


def mask_evidence(analysis) -> MaskEvidence:
    """The module's mask evidence, built once per module analysis."""
    return analysis.extension("masks", MaskEvidence)


class MaskEvidence:
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.values = analysis.values
        self.index = analysis.index
        self._memo: dict[int, str | None] = {}
        self._active: set[int] = set()
        self._cut = False  # the answer being computed met a cycle or the depth limit

    # -- public -------------------------------------------------------------------------------
    def dtype(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """"bool" or "uint8" when ``expr`` is (if a tensor at all) a mask, else None."""
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        if key in self._active or depth > _MAX_DEPTH:
            self._cut = True  # a cycle (`m = m & x` in a loop) or a long chain: no evidence from it
            return None
        outer, self._cut = self._cut, False
        self._active.add(key)
        try:
            found = self._dtype(expr, depth)
        finally:
            self._active.discard(key)
        if not self._cut:
            # Only an answer that met no cut is memoised: it is the same whatever was being
            # computed when it was asked, so no answer depends on the order of the questions.
            self._memo[key] = found
        self._cut = self._cut or outer
        return found

    def function_returns(self, func: cst.FunctionDef) -> str | None:
        """The mask dtype every tensor ``func`` returns has, when one of its returns is a mask
        (the summary's "mask" field: what another module learns of a call of ``func``)."""
        return _combine(self.dtype(r) for r in self.index.returns.get(func, []))

    # -- the cases ----------------------------------------------------------------------------
    def _dtype(self, expr: cst.BaseExpression, depth: int) -> str | None:
        kind = type(expr)
        if kind is cst.Comparison:
            return None if any(isinstance(c.operator, _IDENTITY) for c in expr.comparisons) else mk.BOOL
        if kind is cst.UnaryOperation:
            if isinstance(expr.operator, cst.BitInvert):
                return self.dtype(expr.expression, depth + 1)  # `~m`; `~int_tensor` is no mask
            return None
        if kind is cst.BinaryOperation:
            return self._binary(expr, depth)
        if kind is cst.Call:
            return self._call(expr, depth)
        if kind is cst.Subscript:
            # `m[0, :]`, `(s > t)[0, :, 0]`: any part of a mask is a mask
            return self.dtype(expr.value, depth + 1)
        if kind is cst.Name:
            return self._name(expr, depth)
        if kind is cst.Attribute:
            return self._attribute(expr, depth)
        return None

    def _binary(self, expr: cst.BinaryOperation, depth: int) -> str | None:
        op = expr.operator
        if isinstance(op, _LOGICAL):
            # `m1 & m2`, `pos | (rank < k)`: a mask on either side makes the result one
            return _combine([self.dtype(expr.left, depth + 1), self.dtype(expr.right, depth + 1)])
        if isinstance(op, cst.Multiply):
            # `(u > 0) * (l == u)`: bool * bool stays bool; uint8 * 1 stays uint8
            left, right = self.dtype(expr.left, depth + 1), self.dtype(expr.right, depth + 1)
            if left and right:
                return mk.BYTE if mk.BYTE in (left, right) else mk.BOOL
            return mk.BYTE if mk.BYTE in (left, right) and (_is_int(expr.left) or _is_int(expr.right)) else None
        if isinstance(op, (cst.Add, cst.Subtract)):
            # `1 - suppress` of a uint8 mask stays uint8 (a Python int does not promote it);
            # arithmetic on a bool mask is an error or an integer tensor
            if _is_int(expr.left) and self.dtype(expr.right, depth + 1) == mk.BYTE:
                return mk.BYTE
            if _is_int(expr.right) and self.dtype(expr.left, depth + 1) == mk.BYTE:
                return mk.BYTE
        return None

    def _call(self, call: cst.Call, depth: int) -> str | None:
        func = call.func
        qn = self.values.qualname(func)
        if qn is not None:
            return self._qualified(qn, call, depth)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in mk.MASK_METHODS:
                return mk.BOOL
            if method in mk.CAST_METHODS and not call.args:
                return mk.CAST_METHODS[method]
            if method in ("to", "type"):
                named, cast = self._named_dtype(call, positional=True)
                if named:
                    return cast  # `.to(torch.bool)`, `.type(torch.uint8)`; `.to(torch.float)` is none
            if method in mk.KEEPING_METHODS:
                receiver = self.dtype(func.value, depth + 1)
                if receiver is not None:
                    return receiver
        target = self.index.target_of(call)
        if target is not None and target.name.value != "__init__":
            return self._same_module_result(target, call, depth)
        return None

    def _qualified(self, qn: str, call: cst.Call, depth: int) -> str | None:
        if qn in mk.MASK_FUNCTIONS:
            return mk.BOOL
        if qn in mk.MASK_CONSTRUCTORS:
            return mk.MASK_CONSTRUCTORS[qn]
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if qn.startswith("torch.") and qn.count(".") == 1 and qn[len("torch."):] in torch_knowledge.FACTORIES:
            # `torch.ones((n, n), dtype=bool)`, `torch.zeros(n, dtype=torch.uint8)`
            named, cast = self._named_dtype(call, positional=False)
            if named:
                return cast
            if qn[len("torch."):] in torch_knowledge.LIKE_FACTORIES and positional:
                return self.dtype(positional[0], depth + 1)  # `zeros_like(mask)` keeps its dtype
            return None
        if qn in mk.KEEPING_FUNCTIONS and positional:
            return self.dtype(positional[0], depth + 1)
        if qn in mk.SEQUENCE_FUNCTIONS and positional and isinstance(positional[0], (cst.Tuple, cst.List)):
            parts = [el.value for el in positional[0].elements]  # `torch.stack((m1, m2))`
        elif qn in mk.PAIR_FUNCTIONS and len(positional) == 2:
            parts = positional  # `torch.max(suppress, overlap > t)`: two tensors, not `max(x, dim)`
        else:
            parts = []
        if parts:
            found = [self.dtype(p, depth + 1) for p in parts]
            return (mk.BYTE if mk.BYTE in found else mk.BOOL) if all(found) else None
        found = self.analysis.env.call_mask(qn, call)
        return found if found in (mk.BOOL, mk.BYTE) else None

    def _named_dtype(self, call: cst.Call, positional: bool) -> tuple[bool, str | None]:
        """(whether the call's dtype argument names a dtype, the mask dtype it names or None
        for another): `dtype=torch.bool`, `dtype=bool`, `.to(torch.uint8)`, `.to(x.dtype)`."""
        values = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "dtype"]
        if positional:
            values += [a.value for a in call.args if a.keyword is None and not a.star][:1]
        for value in values:
            qn = self.values.qualname(value)
            if qn in mk.DTYPES:
                return True, mk.DTYPES[qn]
            if isinstance(value, cst.Name) and value.value in mk.BUILTIN_DTYPES and not self.index.binds_locally(value.value, value):
                return True, mk.BUILTIN_DTYPES[value.value]
            if qn is not None and qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in torch_knowledge.DTYPE_NAMES:
                return True, None  # another dtype
            if isinstance(value, cst.Attribute) and value.attr.value == "dtype":
                return True, None  # `.to(x.dtype)`: whatever that is
            if isinstance(value, cst.Name) and value.value in ("float", "int"):
                return True, None
        return False, None

    def _same_module_result(self, func: cst.FunctionDef, call: cst.Call, depth: int) -> str | None:
        """What a same-module function returns for this call: a returned parameter is what
        this call passes for it."""
        found = []
        for r in self.index.returns.get(func, []):
            passed = self._passed_for(r, func, call)
            found.append(self.dtype(passed, depth + 1) if passed is not None else self.dtype(r, depth + 1))
        return _combine(found)

    def _passed_for(self, expr: cst.BaseExpression, func: cst.FunctionDef, call: cst.Call) -> cst.BaseExpression | None:
        if not isinstance(expr, cst.Name):
            return None
        defs = self.values.reaching_defs(expr)
        if len(defs) != 1 or defs[0].how != "param" or defs[0].func is not func:
            return None
        return self.index.argument_for(call, func, defs[0].param)

    def _name(self, name: cst.Name, depth: int) -> str | None:
        found = []
        for d in self.values.reaching_defs(name):
            if d.how == "assign" and d.value is not None:
                found.append(self.dtype(d.value, depth + 1))
            elif d.how == "aug" and d.value is not None and isinstance(getattr(d.stmt, "operator", None), _LOGICAL_AUG):
                found.append(self.dtype(d.value, depth + 1))  # `m &= other_mask`
            elif d.how == "param":
                found.append(self._param(d, depth))
        return _combine(found)

    def _param(self, d, depth: int) -> str | None:
        """A parameter every same-module call site passes a mask for (at least one does): a
        helper called with a mask in one place and integer indices in another is no mask."""
        func, param = d.func, d.param
        if func is None or param is None or param_index(func, param) is None:
            return None
        calls = self.index.call_sites(func)
        if not calls:
            return None
        found = []
        for call in calls:
            arg = self.index.argument_for(call, func, param)
            if arg is None:
                return None
            found.append(self.dtype(arg, depth + 1))
        return mk.BYTE if all(found) and mk.BYTE in found else mk.BOOL if all(found) else None

    def attribute_dtype(self, info, attr: str, depth: int = 0) -> str | None:
        """What the methods of the class ``info`` store on `self.<attr>` (the summary's
        "masks" of a class: what a subclass in another module learns)."""
        return _combine(self.dtype(d.value, depth + 1) for d in info.self_attrs.get(attr, []) if d.how == "assign" and d.value is not None)

    def _attribute(self, expr: cst.Attribute, depth: int) -> str | None:
        """`self.mask`: what the class's methods store there (`self.mask = make_mask(n)` in
        `__init__`), or, when they store nothing there, its base classes' (of this module,
        else of another: env.inherited_attribute_mask)."""
        if not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return None
        info = self.index.class_of(expr)
        attr = expr.attr.value
        for _ in range(6):  # up the same-module bases
            if info is None:
                return None
            if attr in info.self_attrs:
                return self.attribute_dtype(info, attr, depth)
            bases = [b.value for b in info.node.bases if isinstance(b.value, cst.Name) and b.value.value in self.index.classes]
            if not bases:
                found = self.analysis.env.inherited_attribute_mask(info.node, attr)
                return found if found in (mk.BOOL, mk.BYTE) else None
            info = self.index.classes[bases[0].value]
        return None


def _combine(found) -> str | None:
    """Some path gives a mask: uint8 if one does (it is the wider), else bool."""
    found = [f for f in found if f]
    if not found:
        return None
    return mk.BYTE if mk.BYTE in found else mk.BOOL


def _is_int(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer)
