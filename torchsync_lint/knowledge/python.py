"""The Python standard library calls whose result is what they are given."""

from __future__ import annotations

# `copy.deepcopy(model)` is a module placed where the model is (an EMA copy); of a tensor, a
# tensor on its device: "same" (the first argument's kind).
CALLS: dict[str, str] = {
    "copy.deepcopy": "same",
    "copy.copy": "same",
}
