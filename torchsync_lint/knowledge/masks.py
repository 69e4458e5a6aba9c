"""Masks: what makes a tensor of dtype bool (or the legacy uint8 mask), and what keeps one.

Indexing a tensor with a bool or uint8 tensor is mask indexing (TSL105): its result's size is
the mask's count of true elements. Read by analysis/masks.py. Hand-written from torch's docs
(`torch.bool` results of comparisons and logical ops; uint8 indices are still read as masks,
with a deprecation warning) and einx's (its element-wise comparisons are torch's, with an
einsum-like pattern first).
"""

from __future__ import annotations

BOOL = "bool"
BYTE = "uint8"

# Functions whose result is a bool tensor whatever their (tensor) arguments are.
MASK_FUNCTIONS = frozenset(
    {
        "torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf", "torch.isreal",
        "torch.logical_and", "torch.logical_or", "torch.logical_not", "torch.logical_xor", "torch.isin",
        "torch.eq", "torch.ne", "torch.gt", "torch.lt", "torch.ge", "torch.le",
        "torch.greater", "torch.greater_equal", "torch.less", "torch.less_equal", "torch.not_equal",
        "torch.isclose", "torch.signbit",
        "einx.less", "einx.less_equal", "einx.greater", "einx.greater_equal", "einx.equal", "einx.not_equal",
        "einx.logical_and", "einx.logical_or", "einx.logical_not",
    }
)
# Tensor methods whose result is a bool tensor (`x.isnan()`, `(x == v).all(dim=-1)`).
MASK_METHODS = frozenset(
    "eq ne gt lt ge le greater greater_equal less less_equal not_equal isnan isinf isfinite isneginf "
    "isposinf isreal isclose signbit logical_not logical_and logical_or logical_xor isin any all".split()
)
# Tensor methods that convert to a mask dtype.
CAST_METHODS = {"bool": BOOL, "byte": BYTE}
# Legacy typed constructors.
MASK_CONSTRUCTORS = {
    "torch.BoolTensor": BOOL, "torch.cuda.BoolTensor": BOOL, "torch.ByteTensor": BYTE, "torch.cuda.ByteTensor": BYTE,
}
# Dtype objects (qualified names) of masks; the builtin `bool` is torch.bool as a dtype.
DTYPES = {"torch.bool": BOOL, "torch.uint8": BYTE}
BUILTIN_DTYPES = {"bool": BOOL}

# Tensor methods whose result has the receiver's dtype: a mask stays a mask (moved, reshaped,
# sliced, copied, edited in place).
KEEPING_METHODS = frozenset(
    "to cuda cpu view view_as reshape reshape_as flatten squeeze unsqueeze expand expand_as repeat "
    "clone detach contiguous t permute transpose flip roll narrow select unflatten movedim "
    "fill_diagonal_ fill_ zero_ masked_fill masked_fill_ index_select gather tril triu tril_ triu_ "
    "bitwise_not bitwise_and bitwise_or bitwise_xor logical_not_ logical_and_ logical_or_ pin_memory".split()
)
# torch functions whose result has their first tensor argument's dtype.
KEEPING_FUNCTIONS = frozenset(
    {
        "torch.flatten", "torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.transpose", "torch.permute",
        "torch.broadcast_to", "torch.tril", "torch.triu", "torch.flip", "torch.roll", "torch.clone",
        "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.bitwise_not",
    }
)
# torch functions of a sequence of masks that give a mask (uint8 when one of them is uint8).
SEQUENCE_FUNCTIONS = frozenset({"torch.stack", "torch.cat", "torch.concat", "torch.concatenate"})
# ...and of two masks (`torch.max(a, b)`, the element-wise form; `max(x, dim)` is no mask).
PAIR_FUNCTIONS = frozenset(
    {"torch.max", "torch.maximum", "torch.min", "torch.minimum", "torch.bitwise_and", "torch.bitwise_or", "torch.bitwise_xor"}
)
