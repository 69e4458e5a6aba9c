"""The Python standard library: the calls whose result is what they are given, and the modules
whose calls never make a tensor."""

from __future__ import annotations

import sys

_STDLIB = frozenset(sys.stdlib_module_names)

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

# Dicts whose keys are also attributes (`nets = Munch(generator=g); nets.generator(x)`), built
# from keyword arguments: the project view keeps them as dicts of what they hold.
ATTRIBUTE_DICTS = frozenset({"munch.Munch", "munch.DefaultMunch", "easydict.EasyDict", "types.SimpleNamespace", "addict.Dict"})
# A plain dict's own methods: `d.items()` is never the item "items".
DICT_METHODS = frozenset("items keys values get pop popitem update setdefault copy clear fromkeys".split())


def is_stdlib_predicate(qn: str) -> bool:
    """Is ``qn`` a predicate of the standard library (`inspect.isfunction`, `inspect.isclass`,
    `operator.is_`, `keyword.iskeyword`): the stdlib names every such function `is...`, and
    each returns a bool (typeshed's annotations: `-> bool` / `TypeGuard[...]`)?"""
    root, _, last = qn.rpartition(".")
    return bool(root) and root.partition(".")[0] in _STDLIB and last.startswith("is") and last != "islice"  # (itertools.islice: an iterator)


# Standard-library functions whose results are made of the values they are given, and nothing
# else: iterators over them (not factories of callables or classes: `functools.partial(f, 1)`
# and `collections.namedtuple("T", "a b")` are called later with anything).
ITERATORS_OF_VALUES = frozenset(
    f"itertools.{name}" for name in "permutations combinations combinations_with_replacement product chain islice repeat cycle zip_longest count".split()
)


def passes_values(qn: str) -> bool:
    """Is ``qn`` a standard-library function whose results are made of the values it is given
    (ITERATORS_OF_VALUES: `itertools.permutations(range(n), n)` of Python ints)?"""
    return qn in ITERATORS_OF_VALUES


def makes_no_device_tensor(qn: str) -> bool:
    """Is ``qn`` a function or class of a standard-library module that builds Python objects
    (hashlib, pickle, struct, queue...), never a device tensor of its arguments, as an opaque
    function would be taken to (VALUE_PASSING_MODULES above)?"""
    root = qn.partition(".")[0]
    return "." in qn and root in _STDLIB and root not in VALUE_PASSING_MODULES
