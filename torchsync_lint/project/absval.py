"""Abstract values that cross module boundaries, as plain JSON-able dicts.

A module's summary (summary.py) says what its functions return, what its calls pass and what
its loops read in these terms; the project view (view.py) resolves the symbolic ones against
other modules' summaries. The forms:

  {"k": <Kind value>}                          a kind ("device", "host", "model", ...)
  {"k": "loader", "sites": [site, ...]}         a DataLoader built at these sites (file:seq)
  {"k": "metric", "cls": ..., "settings": {...}, "device": "device"|"cpu", ...}
  {"k": "object", "origin": qualname}           a library object (made by that call)
  {"k": "instance", "cls": ref, "args": [...], "kwargs": {...}}
                                                an instance of a project class, with the
                                                arguments of the call that built it
  {"k": "func", "ref": ref}                      a project function passed as a value
  {"k": "class", "ref": ref}                     a project class passed or picked as a value
  {"k": "module", "path": p}                     a project module (`getattr(models, name)`)
  {"k": "devspec", "where": "accelerator"|"cpu"}
  {"k": "tuple", "items": [...]} / {"k": "dict", "items": {...}}
  {"k": "item", "of": abs}                      an item of iterating it (a batch of a loader)
  {"k": "elem", "of": abs, "i": n}               element n of unpacking it
  {"k": "like", "of": abs}                       a tensor computed from it (on its device)
  {"k": "params", "of": abs}                     `of.parameters()`: tensors where the module is
  symbolic, resolved by the view:
  {"k": "param", "fn": ref, "i": n}             what callers pass for parameter n
  {"k": "call", "fn": callee, "kind": k, "args": [...], "kwargs": {...}, "bound": b}
                                                the result of calling a project name with
                                                these arguments (``bound``: `self` is implicit)
  {"k": "sym", "name": dotted}                  an imported name's value
  {"k": "attr", "of": abs, "name": a}            attribute ``a`` of a value (`data.train`)
  {"k": "any", "of": [...]}                      one of these (a join that keeps symbolic parts)
  {"k": "member", "of": abs}                     `getattr(of, <name>)`: any member of a module
  {"k": "to", "of": abs}                         `of.to(device)`: a module moved, or a tensor copied
  {"k": "entry", "of": abs, "name": dotted}       `REGISTRY[key]` of an imported name under a key
                                                the config picks: what the project registered
                                                into it, else a part of ``of``
  {"k": "vcall", "of": abs, "args": [...], "kwargs": {...}}
                                                calling a value (a class or function picked
                                                from a dict or a module by the config)
  {"k": "cycle"}                                 the value being computed itself, met again
                                                through a loop's back edge (`n = f(n)`): it
                                                adds nothing to what the loop starts from, so
                                                joins drop it (the least fixed point); alone,
                                                it is unknown
A ``ref`` is "<file>:<Qual.name>" (a function or class of the summarised file); a ``dotted`` is
an import name as written (`proj.data.make_loader`, `.engine.f`), resolved by the view. A
``callee`` is one of the forms project/callees.py lists (a dotted name, `:Qual`, `^`, `~`, `@`,
`!`, `*`), or `%` for a call of a value picked by the config (the record's ``value``).
"""

from __future__ import annotations

from torchsync_lint.analysis.kinds import DEVICE_VALUES, Kind, join

UNKNOWN = {"k": "unknown"}
CYCLE = {"k": "cycle"}
SYMBOLIC = ("param", "call", "sym", "elem", "like", "item", "attr", "any", "member", "vcall", "to", "entry", "params")  # resolved by the view
# Joined without losing what they are: a value that may be one of these is an "any".
_KEPT_IN_JOINS = frozenset(SYMBOLIC) | {"instance", "func", "object", "class", "module", "tuple", "loader"}
_MAX_ALTERNATIVES = 12



# (a dict, not `Kind(word)`: the enum's lookup by value is slow, and the view asks this often)
_KIND_OF_WORD = {kind.value: kind for kind in Kind}


def of_kind(kind: Kind | None) -> dict:
    return {"k": (kind or Kind.UNKNOWN).value}


def kind_of(value: dict | None) -> Kind:
    """The Kind the per-module analysis sees for a (resolved) abstract value."""
    if not value:
        return Kind.UNKNOWN
    k = value["k"]
    if k == "loader":
        return Kind.DEVICE_LOADER if value.get("device_batches") else Kind.LOADER
    if k == "metric":
        return Kind.MODEL
    if k == "instance":
        if not value.get("module"):
            return Kind.UNKNOWN
        return Kind.MODEL if value.get("placed") else Kind.CPU_MODEL
    if k == "devspec":
        return Kind.HOST
    if k == "tuple":
        kinds = [kind_of(v) for v in value["items"]]
        if any(k in DEVICE_VALUES for k in kinds):
            return Kind.CONTAINER  # a tuple of device tensors: its elements are tensors, it is none
        return join(kinds) if kinds else Kind.HOST
    if k == "dict":
        kinds = [kind_of(v) for v in value["items"].values()]
        return Kind.CONTAINER if any(k in DEVICE_VALUES for k in kinds) else Kind.UNKNOWN
    if k == "item":
        inner = kind_of(value["of"])
        if inner is Kind.UNKNOWN and value.get("batch"):
            return Kind.HOST_TENSOR  # an item of a per-step loop over what we cannot place: a host batch
        return {Kind.LOADER: Kind.HOST_TENSOR, Kind.DEVICE_LOADER: Kind.DEVICE, Kind.PREPARED: Kind.DEVICE, Kind.CONTAINER: Kind.DEVICE}.get(
            inner, inner if inner in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR) else Kind.UNKNOWN
        )
    if k == "params":  # a module's parameters: on the device when it may be there
        inner = kind_of(value["of"])
        return {Kind.MODEL: Kind.DEVICE, Kind.MOVED: Kind.DEVICE, Kind.PREPARED: Kind.DEVICE, Kind.CPU_MODEL: Kind.HOST_TENSOR}.get(inner, Kind.UNKNOWN)
    if k == "like":  # a tensor computed from another value: on its device
        inner = kind_of(value["of"])
        # (of a Python number: `step + 1` of a host counter is a host number)
        return Kind.DEVICE if inner is Kind.CONTAINER else (inner if inner in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST) else Kind.UNKNOWN)
    if k == "any":
        return join(kind_of(v) for v in value["of"])
    if k == "to":
        return Kind.MOVED
    if k in ("object", "param", "call", "sym", "elem", "attr", "func", "class", "module", "member", "vcall", "entry"):
        return _KIND_OF_WORD.get(value.get("kind", "unknown"), Kind.UNKNOWN) if k == "call" else Kind.UNKNOWN
    return _KIND_OF_WORD.get(k, Kind.UNKNOWN)


def join_abs(values: list[dict]) -> dict:
    """What a value may be when it is one of ``values``: equal ones stay as they are, loaders
    from several sites merge, anything else falls back to the join of their kinds."""
    values = [v for v in values if v]
    if not values:
        return UNKNOWN
    if any(v["k"] == "cycle" for v in values):
        values = [v for v in values if v["k"] != "cycle"]
        if not values:
            return CYCLE
    first = values[0]
    if all(v == first for v in values):
        return first
    if all(v["k"] == "loader" for v in values):
        sites = sorted({s for v in values for s in v["sites"]})
        return {"k": "loader", "sites": sites, "device_batches": all(v.get("device_batches") for v in values)}
    if all(v["k"] == "tuple" for v in values):
        # `return train, test` in one branch and `return train, val, test` in the other: position
        # by position, over the tuples long enough to have it
        width = max(len(v["items"]) for v in values)
        return {"k": "tuple", "items": [join_abs([v["items"][i] for v in values if i < len(v["items"])]) for i in range(width)]}
    kept = _alternatives(values)
    if kept is not None:
        return {"k": "any", "of": kept}  # `self.val = 0` and `self.val = val`: the view decides
    return of_kind(join(kind_of(v) for v in values))


def _alternatives(values: list[dict]) -> list[dict] | None:
    """The distinct alternatives of a join that holds a symbolic value, an instance, a
    function or a library object (flattening nested "any"); None when the join is decided by
    kinds alone, or has too many alternatives to keep."""
    flat: list[dict] = []
    for v in values:
        for alt in v["of"] if v["k"] == "any" else [v]:
            if alt not in flat:
                flat.append(alt)
    if not any(v["k"] in _KEPT_IN_JOINS for v in flat) or len(flat) > _MAX_ALTERNATIVES:
        return None
    return flat


def is_host_value(value: dict, depth: int = 0) -> bool:
    """Is ``value`` a host value through and through: a number or string, a host tensor, or a
    tuple or dict of such (`{"loss": float(loss.item())}`)?"""
    k = value.get("k")
    if k in ("host", "host-tensor"):
        return True
    if k in ("tuple", "dict") and depth < 4:
        items = value["items"] if k == "tuple" else list(value["items"].values())
        return all(is_host_value(v, depth + 1) for v in items)
    return False


def element(value: dict, position: int) -> dict:
    """Element ``position`` of a tuple value (what `a, b = f()` binds to `b`)."""
    if value.get("k") == "tuple" and 0 <= position < len(value["items"]):
        return value["items"][position]
    if value.get("k") == "cycle":
        return value
    if value.get("k") == "any" and not any(alt.get("k") in SYMBOLIC for alt in value["of"]):
        return join_abs([element(alt, position) for alt in value["of"]])  # `return a, b` or `return loader`
    if value.get("k") == "item" and kind_of(value) in (Kind.HOST_TENSOR, Kind.DEVICE, Kind.CONTAINER):
        return of_kind(kind_of(value))  # part of a batch: where the batch is
    if value.get("k") == "like":
        return value  # `v, i = x.max(dim=0)` of a tensor computed from a parameter: where it is
    if value.get("k") in SYMBOLIC:
        return {"k": "elem", "of": value, "i": position}  # resolved by the view
    kind = kind_of(value)
    if kind is Kind.CONTAINER:
        return of_kind(Kind.DEVICE)  # an element of a container of device tensors
    return of_kind(kind if kind in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR) else Kind.UNKNOWN)

