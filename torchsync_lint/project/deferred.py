"""Summary fields computed when the project view first reads them.

Most of a module's summary is cheap, but the abstract value of what each function returns
and of each argument of each call of an imported name is not: on the 25 project trees of
docs/precision.md they were half of the summaries' time, while the view read the returns of
315 of 3,562 functions and the arguments of 3,764 of 8,883 calls. Those fields are deferred,
and so are whether a call runs per step (the hot-loop analysis of its module: the view asks
it of the calls whose callers it follows) and what a class stores on each `self.<attr>` (the
view reads 1,149 of 3,454 there). A record knows how to compute each, and the first read
computes it (the session keeps the module's summarizer for that, project/summarizing.py, or
parses the module again). A field's value is a function of the module alone, as the rest of
the summary is, so an answer never depends on what was read first, and a summary with every
field computed (a worker's, or `summarize(...)` without ``deferred``) equals one whose fields
were read one by one.

A cache entry holds only the computed fields (json writes a dict's own items); the session
defers the missing ones again when it reads the entry back (a class's attributes: those of
its "attr_names" that the entry's "attrs" lack).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

# The fields of a function's record and of a call's record that are computed on first read.
FUNCTION_FIELDS = ("returns", "yielded", "step", "epoch", "forwards", "line", "mask", "engines")
CALL_FIELDS = ("args", "kwargs", "line", "hot", "gated", "loop", "needs", "literals")


class DeferredRecord(dict):
    """A summary record (a function's, a call's) whose fields ``names`` are computed on first
    read by ``compute(name)``, then stored like the others. Reading through ``[]``, ``get`` and
    ``in`` sees them; iteration, ``items()`` and equality see only the fields computed so far
    (``complete()`` computes the rest). Pickling computes them all: a worker gets plain values.
    (One ``compute`` per record, not a thunk per field: a summary has thousands of records.)"""

    __slots__ = ("_names", "_compute")

    def __init__(self, fields: dict, names: Iterable[str], compute: Callable[[str], object]) -> None:
        super().__init__(fields)
        self._names = names  # (a field present in ``fields`` is never missing: not computed)
        self._compute = compute

    def __missing__(self, key):
        if key not in self._names:
            raise KeyError(key)
        value = self[key] = self._compute(key)
        return value

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._names

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self[key] if key in self._names else default

    def complete(self) -> dict:
        """A plain dict of every field, each computed now if it was not yet."""
        for key in self._names:
            self[key]
        return {k: dict.__getitem__(self, k) for k in dict.keys(self)}

    def __reduce__(self):
        return (dict, (self.complete(),))


class DeferredDict(DeferredRecord):
    """A call's keyword arguments, each value computed on first read; unlike a record, every
    way of reading it (``items()``, iteration) computes what it reads."""

    __slots__ = ()

    def keys(self):
        return self.complete().keys()

    def items(self):
        return self.complete().items()

    def values(self):
        return self.complete().values()

    def __iter__(self):
        return iter(self.complete())

    def __len__(self) -> int:
        return len(set(self._names).union(dict.keys(self)))


class DeferredAttrs(DeferredDict):
    """A class's table of what it stores on `self.<attr>`: each attribute's value computed on
    first read, None when it has none. Read like the plain table of a summary computed at once,
    which holds only the attributes with a value: ``get`` gives None for the others, ``in`` and
    ``[]`` do not see them."""

    __slots__ = ()

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            value = dict.__getitem__(self, key)
        else:
            value = self.__missing__(key) if key in self._names else None
        return default if value is None else value

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def complete(self) -> dict:
        for key in self._names:
            self.get(key)
        return self.computed()

    def computed(self) -> dict:
        """The attributes computed so far that have a value (a cache entry's)."""
        return {k: v for k, v in dict.items(self) if v is not None}

    def __len__(self) -> int:
        return len(self.complete())


class DeferredList(list):
    """A call's positional arguments, item ``i`` computed on first read by ``compute(names[i])``
    (its length is known)."""

    __slots__ = ("_names", "_compute")

    def __init__(self, names: list[str], compute: Callable[[str], object]) -> None:
        super().__init__([None] * len(names))
        self._names: list[str | None] = list(names)
        self._compute = compute

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        name = self._names[index]
        if name is not None:
            self._names[index] = None
            list.__setitem__(self, index, self._compute(name))
        return list.__getitem__(self, index)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def complete(self) -> list:
        return [self[i] for i in range(len(self))]

    def __reduce__(self):
        return (list, (self.complete(),))


def complete(summary: dict) -> dict:
    """``summary`` with every deferred field computed (plain dicts and lists throughout)."""
    return _records_mapped(summary, lambda r: r.complete() if isinstance(r, DeferredRecord) else r, lambda a: a.complete())


def computed(summary: dict) -> dict:
    """``summary`` as a cache entry holds it: the fields computed so far (an argument list or
    keyword table the view has read is completed: json would see its placeholders; a class's
    attributes are those computed so far that have a value)."""
    return _records_mapped(summary, lambda r: {k: dict.__getitem__(r, k) for k in dict.keys(r)}, lambda a: a.computed())


def _records_mapped(summary: dict, fields: Callable[[dict], dict], attrs: Callable[[DeferredAttrs], dict]) -> dict:
    """A copy of ``summary`` whose function and call records are ``fields(record)``, their
    argument lists and keyword tables completed, and whose classes' deferred attribute tables
    are ``attrs(table)``."""

    def plain(record: dict) -> dict:
        out = dict(fields(record))
        for key in ("args", "kwargs"):
            if isinstance(out.get(key), (DeferredList, DeferredDict)):
                out[key] = out[key].complete()
        return out

    def plain_class(record: dict) -> dict:
        return {**record, "attrs": attrs(record["attrs"])} if isinstance(record.get("attrs"), DeferredAttrs) else record

    out = {**summary, "functions": {q: plain(r) for q, r in summary["functions"].items()}, "calls": [plain(c) for c in summary["calls"]]}
    if "classes" in summary:
        out["classes"] = {name: plain_class(r) for name, r in summary["classes"].items()}
    return out


def defer_missing(summary: dict, defer: Callable[[str, object], Callable[[str], object]]) -> dict:
    """``summary`` (read from the cache: its deferred fields absent unless the module's
    earlier run had computed them) with its absent fields computed on first read by
    ``defer(kind, key)(field)``, kind "fn" keyed by the function's qualified name, "call" by
    the call's seq."""

    def deferring(record: dict, kind: str, key, names: tuple[str, ...]) -> dict:
        return DeferredRecord(record, names, defer(kind, key)) if any(f not in record for f in names) else record

    def deferring_attrs(name: str, record: dict) -> dict:
        missing = tuple(a for a in record.get("attr_names", ()) if a not in record["attrs"])  # (and those with no value)
        return {**record, "attrs": DeferredAttrs(record["attrs"], missing, defer("class", name))} if missing else record

    summary["functions"] = {q: deferring(r, "fn", q, FUNCTION_FIELDS) for q, r in summary["functions"].items()}
    summary["calls"] = [deferring(c, "call", c.get("seq"), CALL_FIELDS) for c in summary["calls"]]
    summary["classes"] = {name: deferring_attrs(name, r) for name, r in summary["classes"].items()}
    return summary
