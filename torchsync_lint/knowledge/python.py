"""The Python standard library: the calls whose result is what they are given, and the modules
whose calls never make a tensor."""

from __future__ import annotations

# `copy.deepcopy(model)` is a module placed where the model is (an EMA copy); of a tensor, a
# tensor on its device: "same" (the first argument's kind).
CALLS: dict[str, str] = {
    "copy.deepcopy": "same",
    "copy.copy": "same",
}

# Standard-library modules whose functions hand back what they are given, or build from it
# (`operator.add(a, b)`, `functools.reduce(...)`, `itertools.chain(...)`, a `namedtuple` of
# tensors): their results are whatever the arguments make them. Every other standard-library
# module (hashlib, pickle, struct, re, logging, csv, datetime...) returns Python objects, never
# a tensor on the device, whatever it is given.
VALUE_PASSING_MODULES = frozenset(
    "builtins copy operator functools itertools collections typing dataclasses weakref types "
    "contextlib abc enum heapq bisect inspect".split()
)
