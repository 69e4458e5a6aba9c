"""Summary fields computed when the project view first reads them.

Most of a module's summary is cheap, but the abstract value of what each function returns
and of each argument of each call of an imported name is not: on the 25 project trees of
docs/precision.md they were half of the summaries' time, while the view read the returns of
315 of 3,562 functions and the arguments of 3,764 of 8,883 calls. Those fields are deferred:
a record holds a thunk for each, and the first read computes it (the session keeps the
module's summarizer for that, project/summarizing.py, or parses the module again). A field's value is a function of
the module alone, as the rest of the summary is, so an answer never depends on what was read
first, and a summary with every field computed (a worker's, or `summarize(...)` without
``deferred``) equals one whose fields were read one by one.

A cache entry holds only the computed fields (json writes a dict's own items); the session
defers the missing ones again when it reads the entry back.
"""

from __future__ import annotations

from collections.abc import Callable

# The fields of a function's record and of a call's record that are computed on first read.
FUNCTION_FIELDS = ("returns", "yielded", "step", "forwards", "line")
CALL_FIELDS = ("args", "kwargs", "line")


class DeferredRecord(dict):
    """A summary record (a function's, a call's) whose ``thunks`` fields are computed on first
    read, then stored like the others. Reading through ``[]``, ``get`` and ``in`` sees them;
    iteration, ``items()`` and equality see only the fields computed so far (``complete()``
    computes the rest). Pickling computes them all: a worker gets plain values."""

    __slots__ = ("_thunks",)

    def __init__(self, fields: dict, thunks: dict[str, Callable[[], object]]) -> None:
        super().__init__(fields)
        self._thunks = {k: t for k, t in thunks.items() if k not in fields}

    def __missing__(self, key):
        thunk = self._thunks.pop(key, None)
        if thunk is None:
            raise KeyError(key)
        value = self[key] = thunk()
        return value

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._thunks

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self[key] if key in self._thunks else default

    def complete(self) -> dict:
        """A plain dict of every field, each computed now if it was not yet."""
        for key in list(self._thunks):
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
        return dict.__len__(self) + len(self._thunks)


class DeferredList(list):
    """A call's positional arguments, each computed on first read (its length is known)."""

    __slots__ = ("_thunks",)

    def __init__(self, thunks: list[Callable[[], object]]) -> None:
        super().__init__([None] * len(thunks))
        self._thunks: list[Callable[[], object] | None] = list(thunks)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        thunk = self._thunks[index]
        if thunk is not None:
            self._thunks[index] = None
            list.__setitem__(self, index, thunk())
        return list.__getitem__(self, index)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def complete(self) -> list:
        return [self[i] for i in range(len(self))]

    def __reduce__(self):
        return (list, (self.complete(),))


def complete(summary: dict) -> dict:
    """``summary`` with every deferred field computed (plain dicts and lists throughout)."""
    return _records_mapped(summary, lambda r: r.complete() if isinstance(r, DeferredRecord) else r)


def computed(summary: dict) -> dict:
    """``summary`` as a cache entry holds it: the fields computed so far (an argument list or
    keyword table the view has read is completed: json would see its placeholders)."""
    return _records_mapped(summary, lambda r: {k: dict.__getitem__(r, k) for k in dict.keys(r)})


def _records_mapped(summary: dict, fields: Callable[[dict], dict]) -> dict:
    """A copy of ``summary`` whose function and call records are ``fields(record)``, their
    argument lists and keyword tables completed."""

    def plain(record: dict) -> dict:
        out = dict(fields(record))
        for key in ("args", "kwargs"):
            if isinstance(out.get(key), (DeferredList, DeferredDict)):
                out[key] = out[key].complete()
        return out

    return {**summary, "functions": {q: plain(r) for q, r in summary["functions"].items()}, "calls": [plain(c) for c in summary["calls"]]}


def defer_missing(summary: dict, thunk: Callable[[str, object, str], Callable[[], object]]) -> dict:
    """``summary`` (read from the cache: its deferred fields absent unless the module's
    earlier run had computed them) with a thunk for each absent field: ``thunk(kind, key,
    field)``, kind "fn" keyed by the function's qualified name, "call" by the call's seq."""

    def deferring(record: dict, kind: str, key, names: tuple[str, ...]) -> dict:
        missing = [f for f in names if f not in record]
        return DeferredRecord(record, {f: thunk(kind, key, f) for f in missing}) if missing else record

    summary["functions"] = {q: deferring(r, "fn", q, FUNCTION_FIELDS) for q, r in summary["functions"].items()}
    summary["calls"] = [deferring(c, "call", c.get("seq"), CALL_FIELDS) for c in summary["calls"]]
    return summary
