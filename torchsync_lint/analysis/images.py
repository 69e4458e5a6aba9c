"""What makes float images out of uint8 ones on the host (TSL304): transform calls
(knowledge/transforms.py) and `x / 255`-style arithmetic. Shared by the rule and the module
summary, so another module can learn that a dataset class already converts its images."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.loaders import literal_value
from torchsync_lint.knowledge import transforms as tk


def is_divide_by_255(node: cst.CSTNode) -> bool:
    """`x / 255`, `x / 255.0`, `x.div(255)`, `x.div_(255.)`, `x.true_divide(255)`, and the
    [-1, 1] form `x / 127.5` (then `- 1`)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        if _is_number(node.left):
            return False  # `18 / 255.`: a constant (a hue delta), not an image
        ok, value = literal_value(node.right)
        return ok and not isinstance(value, bool) and value in tk.PIXEL_SCALES
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("div", "div_", "true_divide", "true_divide_"):
        positional = [a for a in node.args if a.keyword is None]
        if len(positional) == 1:
            ok, value = literal_value(positional[0].value)
            return ok and not isinstance(value, bool) and value in tk.PIXEL_SCALES
    return False


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def divided_operand(node: cst.CSTNode) -> cst.BaseExpression:
    return node.left if isinstance(node, cst.BinaryOperation) else node.func.value  # type: ignore[union-attr]


def is_float_converter(analysis, call: cst.Call) -> bool:
    """`ToTensor()`, `ConvertImageDtype(torch.float)`, `v2.ToDtype(torch.float32, scale=True)`,
    `create_transform(...)` of timm without `use_prefetcher=True`."""
    qn = analysis.qualname(call.func)
    if qn in tk.CONVERTERS:
        return True
    if qn in tk.PIPELINE_FACTORIES:
        keyword = tk.PIPELINE_FACTORIES[qn]
        passed = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if any(a.star for a in call.args):
            return False  # `**cfg` may turn the prefetcher on: unknown
        return passed is None or (literal_value(passed) == (True, False))
    if qn not in tk.DTYPE_CONVERTERS:
        return False
    dtype_args = [a.value for a in call.args if a.keyword is None or a.keyword.value == "dtype"]
    if qn.endswith(tk.DTYPE_FUNCTIONAL_SUFFIXES):
        dtype_args = dtype_args[1:]  # the first positional is the image
    for value in dtype_args[:1]:
        exprs = [el.value for el in value.elements if isinstance(el, cst.DictElement)] if isinstance(value, cst.Dict) else [value]
        for e in exprs:
            dq = analysis.qualname(e) or ""
            if dq.startswith("torch.") and dq.rsplit(".", 1)[-1] in tk.WIDE_FLOATS:
                return True
    return False


def is_normalize(analysis, call: cst.Call) -> bool:
    return analysis.qualname(call.func) in tk.NORMALIZE


_NESTED = (cst.FunctionDef, cst.Lambda)


def host_float_sites(analysis, func: cst.FunctionDef, depth: int = 1) -> list[cst.CSTNode]:
    """The float conversions in ``func`` (a dataset's `__getitem__`): `x / 255` arithmetic and
    converter calls, and those of the same module's functions and methods it calls
    (`self.preprocess(img)`), ``depth`` levels down."""
    out: list[cst.CSTNode] = []
    to_pil: list[cst.Call] = []
    index = analysis.index
    for node in analysis.tree.walk_subtree(func.body, _NESTED):
        if is_divide_by_255(node) or (isinstance(node, cst.Call) and is_float_converter(analysis, node)):
            out.append(node)
        elif isinstance(node, cst.Call) and analysis.qualname(node.func) in tk.TO_PIL:
            to_pil.append(node)
        elif depth > 0 and isinstance(node, cst.Call):
            target = index.target_of(node)
            if target is not None and target is not func:
                out += host_float_sites(analysis, target, depth - 1)
    return drop_undone(analysis, out, to_pil)


def drop_undone(analysis, found: list, calls: list[cst.Call]) -> list:
    """``found`` without the conversions a later `to_pil_image` in the same function undoes
    (tensor -> PIL -> tensor: the first float tensor is not what the dataset returns)."""
    to_pil = [c for c in calls if analysis.qualname(c.func) in tk.TO_PIL]
    if not to_pil:
        return found
    enclosing = analysis.index.enclosing_function
    return [
        n for n in found
        if not (isinstance(n, cst.Call) and any(enclosing(p) is enclosing(n) and _runs_before(analysis, n, p) for p in to_pil))
    ]


def _runs_before(analysis, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """Does ``first`` run before ``second`` in straight-line code: an argument of it, or a
    later statement (preorder puts a call before its arguments)."""
    if analysis.index.inside(first, second):
        return True
    return analysis.index.seq(first) < analysis.index.seq(second) and not analysis.index.inside(second, first)
