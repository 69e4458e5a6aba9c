"""The project view: every module's summary, and the answers that combine them.

Summaries are computed per module, from that module alone (summary.py). Here they are joined
along the project's imports, with no pass over any module's source:

- what a function returns, and what callers in other modules pass for each parameter (the
  join over every call site; a call site that passes `*args`/`**kwargs` makes it unknown);
- which functions run every step: called from a per-step loop of another module, directly or
  through a chain of calls that are themselves per step;
- which functions run a training step or a pass over a loader (for the caller's hot loops);
- which DataLoaders feed the device: a loop anywhere copies their batches there, or they are
  handed to accelerate / Lightning / Fabric; and, back from those loaders, the dataset classes
  they read, the functions those classes' `__getitem__` calls, and the arguments of calls that
  become their datasets or their datasets' transforms.

Every answer is memoised, cycles answer "unknown" while they are open, and chains are cut at a
fixed depth: unknown stays silent. A view holds one connected component of the import graph
(project/session.py). So that no answer depends on the order in which questions are asked
(which file is linted first, in which process), the session ``settle()``s a view once, in a
fixed order, and lints each file against a ``fork()`` of it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from torchsync_lint.project import absval
from torchsync_lint.project.layout import Layout

# The format of the summaries this view reads (project/summary.py writes it; part of their
# cache key, so it lives here, where no parser is imported).
SUMMARY_VERSION = 2
_MAX_DEPTH = 12
# nn.Module methods that return the module (`.to()` moves it).
_MODULE_SELF_METHODS = frozenset({"to", "cuda", "train", "eval", "half", "float", "double", "bfloat16", "requires_grad_"})


class ProjectView:
    def __init__(self, layout: Layout, summaries: dict[str, dict]) -> None:
        self.layout = layout
        self.summaries = summaries  # relpath -> summary
        self._names: dict[tuple[str, str], tuple | None] = {}
        self._callers: dict[str, list[tuple[str, dict, int]]] | None = None
        self._resolved: dict[str, dict] = {}
        self._open: set[str] = set()
        self._hot: dict[str, tuple[str, bool] | None] = {}
        self._flags: dict[tuple[str, str], bool] = {}
        self._fed_sites: set[str] | None = None
        self._fed_datasets: FedDatasets | None = None

    # -- names --------------------------------------------------------------------------------
    def resolve_name(self, dotted: str, from_path: str, depth: int = 0) -> tuple | None:
        """What an import name written in ``from_path`` is: ("function", path, qual),
        ("class", path, qual), ("value", path, name), ("module", path, ""); None when it is not
        the project's own. Re-exports (`from .engine import f` in a package's __init__) are
        followed."""
        key = (dotted, from_path)
        if key in self._names:
            return self._names[key]
        self._names[key] = None  # a re-export cycle
        found = None
        if dotted.startswith("*"):  # a name from one of the module's `from m import *`
            head, dot, tail = dotted[1:].partition(".")
            binding = self.star_binding(from_path, head)
            found = self.resolve_name(binding + dot + tail, from_path, depth + 1) if binding and depth < 6 else None
        elif depth < 6:
            located = self.layout.resolve(dotted, self.layout.root / from_path)
            if located is not None:
                path = self.layout.relpath(located[0])
                if path in self.summaries:
                    found = self._member(path, located[1], depth)
        self._names[key] = found
        return found

    def _member(self, path: str, rest: str, depth: int) -> tuple | None:
        summary = self.summaries[path]
        if not rest:
            return ("module", path, "")
        head, _, tail = rest.partition(".")
        if head in summary["classes"]:
            if not tail:
                return ("class", path, head)
            method = f"{head}.{tail}"
            if method in summary["functions"]:
                return ("function", path, method)
            inherited = self._inherited_method(path, head, tail, depth)
            return inherited
        if not tail and rest in summary["functions"]:
            return ("function", path, rest)
        if head in summary["aliases"]:  # a name this module imports (a re-export)
            target = summary["aliases"][head] + (f".{tail}" if tail else "")
            return self.resolve_name(target, path, depth + 1)
        if not tail and rest in summary["values"]:
            return ("value", path, rest)
        binding = self.star_binding(path, head) if summary.get("stars") else None
        if binding is not None:  # `from .b import *` in a package's __init__, re-exported
            return self.resolve_name(binding + (f".{tail}" if tail else ""), path, depth + 1)
        return None

    def star_binding(self, path: str, name: str, depth: int = 0) -> str | None:
        """The import name ``name`` stands for in ``path`` through its `from m import *` of
        project modules: an alias they import, or a function/class/value they define."""
        summary = self.summaries.get(path)
        if summary is None or depth > 4:
            return None
        for star in summary.get("stars", ()):
            found = self.resolve_name(star, path)
            if found is None or found[0] != "module":
                continue
            target = self.summaries[found[1]]
            if name in target["aliases"]:
                alias = target["aliases"][name]
                if not alias.startswith("."):
                    return alias
                resolved = self.layout.resolve(alias, self.layout.root / found[1])
                if resolved is not None:
                    return f"{self.layout.module_name(resolved[0])}" + (f".{resolved[1]}" if resolved[1] else "")
            if name in target["functions"] or name in target["classes"] or name in target["values"]:
                return f"{self.layout.module_name(self.layout.root / found[1])}.{name}"
            deeper = self.star_binding(found[1], name, depth + 1)
            if deeper is not None:
                return deeper
        return None

    def _inherited_method(self, path: str, cls: str, method: str, depth: int) -> tuple | None:
        for base in self.summaries[path]["classes"][cls]["bases"]:
            found = self.class_of(base, path)
            if found is not None and depth < 6:
                candidate = self._member(found[0], f"{found[1]}.{method}", depth + 1)
                if candidate is not None:
                    return candidate
        return None

    def class_of(self, base: str, from_path: str) -> tuple[str, str] | None:
        """(path, class) for a base class written in ``from_path`` (`:Local` or an import name)."""
        if base.startswith(":"):
            return (from_path, base[1:]) if base[1:] in self.summaries[from_path]["classes"] else None
        found = self.resolve_name(base, from_path)
        return (found[1], found[2]) if found and found[0] == "class" else None

    def function(self, path: str, qual: str) -> dict | None:
        return self.summaries.get(path, {}).get("functions", {}).get(qual)

    def class_flag(self, path: str, cls: str, flag: str, depth: int = 0) -> bool:
        """A class's "module"/"lightning" flag, through project base classes."""
        record = self.summaries[path]["classes"].get(cls)
        if record is None or depth > 6:
            return False
        if record[flag]:
            return True
        return any(self.class_flag(*found, flag, depth + 1) for base in record["bases"] if (found := self.class_of(base, path)))

    def class_attr(self, path: str, cls: str, attr: str, depth: int = 0) -> dict | None:
        record = self.summaries[path]["classes"].get(cls)
        if record is None or depth > 6:
            return None
        if attr in record["attrs"]:
            return self.resolve(record["attrs"][attr], path)
        for base in record["bases"]:
            found = self.class_of(base, path)
            if found is not None:
                value = self.class_attr(*found, attr, depth + 1)
                if value is not None:
                    return value
        return None

    # -- callers ------------------------------------------------------------------------------
    def callers(self, ref: str) -> list[tuple[str, dict, int]]:
        """(caller's path, call record, how many leading parameters the call fills itself)."""
        if self._callers is None:
            self._callers = self._caller_table()
        return self._callers.get(ref, [])

    def _caller_table(self) -> dict[str, list[tuple[str, dict, int]]]:
        """Every call site of every project function, built whole before any answer reads it.
        A call of a parameter's method (`^a.py:f#0.item`) finds its target through what f's
        callers pass, i.e. through this table: such calls are added in rounds, each against
        the complete table of the round before with fresh memos, until it stops changing."""
        direct: dict[str, list[tuple]] = {}
        through: list[tuple[str, int, dict]] = []
        for path in sorted(self.summaries):
            for n, call in enumerate(self.summaries[path]["calls"]):
                if call["callee"].startswith("^"):
                    through.append((path, n, call))
                    continue
                target = self._call_target(call, path)
                if target is not None:
                    direct.setdefault(target[0], []).append((path, n, call, target[1]))
        table = direct
        for _ in range(_MAX_DEPTH if through else 0):
            self._callers = _strip(table)
            self._forget_answers()
            grown = {ref: list(entries) for ref, entries in direct.items()}
            for path, n, call in through:
                target = self._call_target(call, path)
                if target is not None:
                    grown.setdefault(target[0], []).append((path, n, call, target[1]))
            for entries in grown.values():
                entries.sort(key=lambda e: (e[0], e[1]))
            if grown == table:
                break
            table = grown
        self._forget_answers()
        return _strip(table)

    def _forget_answers(self) -> None:
        """Drop every memo that reads the callers table."""
        self._resolved, self._open, self._hot, self._flags = {}, set(), {}, {}
        self._fed_sites = self._fed_datasets = None

    def settle(self) -> ProjectView:
        """Compute, in a fixed order, what every file's lint shares; ``fork()`` starts here."""
        self.callers("")
        self.fed_datasets()
        return self

    def fork(self) -> ProjectView:
        """The settled view with memos of its own: one file's questions never change another's answers."""
        other = copy.copy(self)
        other._names, other._resolved, other._open = dict(self._names), dict(self._resolved), set()
        other._hot, other._flags = dict(self._hot), dict(self._flags)
        return other

    def _param_method(self, callee: str) -> tuple[str, str] | None:
        """`^<ref>#<i>.<method>`: the method of what callers pass for that parameter."""
        ref, _, rest = callee[1:].partition("#")
        index, _, method = rest.partition(".")
        value = self.param_value(ref, int(index)) if index.isdigit() else None
        if value is None:
            return None
        if value.get("k") == "instance":
            path, cls = value["cls"].split(":", 1)
        elif value.get("k") == "object":
            found = self.resolve_name(value["origin"], ref.split(":", 1)[0])
            if found is None or found[0] != "class":
                return None
            path, cls = found[1], found[2]
        else:
            return None
        for name in (method, "forward") if method == "__call__" else (method,):
            member = self._member(path, f"{cls}.{name}", 0)
            if member is not None and member[0] == "function":
                return member[1], member[2]
        return None

    def _call_target(self, call: dict, path: str) -> tuple[str, int] | None:
        if call["callee"].startswith("^"):
            found = self._param_method(call["callee"])
            return (f"{found[0]}:{found[1]}", 1) if found else None
        if call["callee"].startswith(":"):  # a function of the calling module itself
            qual = call["callee"][1:]
            record = self.function(path, qual)
            if record is None:
                return None
            return f"{path}:{qual}", (1 if call["bound"] else 0)
        found = self.resolve_name(call["callee"], path)
        if found is None and call["callee"].endswith(".__call__"):  # a module instance called: its forward
            found = self.resolve_name(call["callee"][: -len("__call__")] + "forward", path)
        if found is None:
            return None
        if found[0] == "class":
            init = self._member(found[1], f"{found[2]}.__init__", 0)
            return (f"{init[1]}:{init[2]}", 1) if init and init[0] == "function" else None
        if found[0] != "function":
            return None
        fpath, qual = found[1], found[2]
        if qual.endswith(".__call__") and qual not in self.summaries[fpath]["functions"]:
            return None
        record = self.function(fpath, qual)
        shift = record["bound"] if call["bound"] else 0
        return f"{fpath}:{qual}", shift

    def call_target(self, callee: str, from_path: str) -> tuple[str, dict] | None:
        """The project function an import name calls (a class: its `__init__`; an instance
        called like a function: its `__call__` or `forward`)."""
        if callee.startswith(":"):
            record = self.function(from_path, callee[1:])
            return (from_path, record) if record is not None else None
        found = self.resolve_name(callee, from_path)
        if found is None:
            if callee.endswith(".__call__"):
                return self.call_target(callee[: -len("__call__")] + "forward", from_path)
            return None
        if found[0] == "function":
            return found[1], self.function(found[1], found[2])
        return None

    # -- values ---------------------------------------------------------------------------------
    def param_value(self, ref: str, index: int) -> dict | None:
        """What the project's call sites of ``ref`` pass for parameter ``index`` (None: no call
        site we can see). The module's own call sites are included: a join is unchanged by
        seeing one twice, and a summary's parameters need them (`main()` calls `run(loader)`,
        which hands `loader` to another module)."""
        path, qual = ref.split(":", 1)
        record = self.function(path, qual)
        if record is None:
            return None
        name = record["params"][index] if index < len(record["params"]) else None
        passed = []
        for caller_path, call, shift in self.callers(ref):
            if call["star"]:
                return absval.UNKNOWN
            position = index - shift
            if position < 0:
                return None  # `self`
            if position < len(call["args"]):
                passed.append(self.resolve(call["args"][position], caller_path))
            elif name in call["kwargs"]:
                passed.append(self.resolve(call["kwargs"][name], caller_path))
        return absval.join_abs(passed) if passed else None

    def returns(self, path: str, qual: str) -> dict:
        record = self.function(path, qual)
        return self.resolve(record["returns"], path) if record else absval.UNKNOWN

    def resolve(self, value: dict, from_path: str, depth: int = 0) -> dict:
        """``value`` with its symbolic parts (parameters, calls and names of other modules)
        replaced by what the project says they are."""
        kind = value.get("k")
        if kind in ("tuple", "dict", "item", "like", "elem"):
            if kind == "tuple":
                return {"k": "tuple", "items": [self.resolve(v, from_path, depth + 1) for v in value["items"]]}
            if kind == "dict":
                return {"k": "dict", "items": {k: self.resolve(v, from_path, depth + 1) for k, v in value["items"].items()}}
            inner = self.resolve(value["of"], from_path, depth + 1)
            if kind == "elem":
                return absval.element(inner, value["i"]) if inner.get("k") not in absval.SYMBOLIC else absval.UNKNOWN
            return {**value, "of": inner}
        if kind not in ("param", "call", "sym"):
            return value
        key = json.dumps([value, from_path], sort_keys=True)
        if key in self._resolved:
            return self._resolved[key]
        if key in self._open or depth > _MAX_DEPTH:
            return absval.UNKNOWN
        self._open.add(key)
        try:
            result = self._resolve_symbolic(value, from_path, depth)
        finally:
            self._open.discard(key)
        self._resolved[key] = result
        return result

    def _resolve_symbolic(self, value: dict, from_path: str, depth: int) -> dict:
        kind = value["k"]
        if kind == "param":
            passed = self.param_value(value["fn"], value["i"])
            return passed if passed is not None else absval.UNKNOWN
        found = self.resolve_name(value["fn"] if kind == "call" else value["name"], from_path)
        if kind == "sym":
            if found is not None and found[0] == "value":
                return self.resolve(self.summaries[found[1]]["values"][found[2]], found[1], depth + 1)
            return absval.UNKNOWN
        if found is None:
            target = self.call_target(value["fn"], from_path)
            if target is not None:
                return self.resolve(target[1]["returns"], target[0], depth + 1)
            owner, _, method = value["fn"].rpartition(".")
            cls = self.resolve_name(owner, from_path) if method in _MODULE_SELF_METHODS else None
            if cls is not None and cls[0] == "class" and self.class_flag(cls[1], cls[2], "module"):
                # `ConvNet().to(device)`: the module itself, placed
                return {"k": "instance", "cls": f"{cls[1]}:{cls[2]}", "module": True, "placed": True}
            if value.get("kind", "unknown") == "unknown":
                return {"k": "object", "origin": value["fn"]}  # a library's object
            return {"k": value["kind"]}
        if found[0] == "class":
            return {"k": "instance", "cls": f"{found[1]}:{found[2]}", "module": self.class_flag(found[1], found[2], "module")}
        if found[0] == "function":
            return self.resolve(self.function(found[1], found[2])["returns"], found[1], depth + 1)
        return absval.UNKNOWN

    # -- per-step code ----------------------------------------------------------------------------
    def hot(self, ref: str) -> tuple[str, bool] | None:
        """(where it is called from every step, gated) when a per-step loop of another module
        calls ``ref`` (directly, or through functions that are per step themselves)."""
        if ref in self._hot:
            return self._hot[ref]
        self._hot[ref] = None  # a call cycle
        found = None
        for caller_path, call, _ in self.callers(ref):
            if call["hot"] == "yes":
                found = (f"{caller_path}:{call['line']}", call["gated"])
            elif call["hot"] == "caller" and call["caller"]:
                outer = self.hot(call["caller"])
                if outer is not None:
                    found = (f"{caller_path}:{call['line']}", outer[1] or call["gated"])
            if found is not None and not found[1]:
                break
        self._hot[ref] = found
        return found

    def function_flag(self, ref: str, flag: str, depth: int = 0) -> bool:
        """A function's "step" / "epoch" flag, through the project functions it calls."""
        key = (ref, flag)
        if key in self._flags:
            return self._flags[key]
        self._flags[key] = False  # recursion
        path, qual = ref.split(":", 1)
        record = self.function(path, qual)
        result = bool(record and record[flag])
        if record and not result and depth < _MAX_DEPTH:
            for callee in record["callees"]:
                target = self.call_target(callee, path)
                if target is not None and target[1] is not None:
                    callee_ref = f"{target[0]}:{self._qual_of(target)}"
                    if self.function_flag(callee_ref, flag, depth + 1):
                        result = True
                        break
        self._flags[key] = result
        return result

    def _qual_of(self, target: tuple[str, dict]) -> str:
        path, record = target
        return next(q for q, r in self.summaries[path]["functions"].items() if r is record)

    # -- loaders --------------------------------------------------------------------------------
    def fed_sites(self) -> set[str]:
        """DataLoader sites whose batches some loop moves to the device (or a trainer takes)."""
        if self._fed_sites is None:
            self._fed_sites = set()
            for path in sorted(self.summaries):
                for feed in self.summaries[path]["feeds"]:
                    value = self.resolve(feed["iter"], path)
                    self._fed_sites.update(_loader_sites(value))
        return self._fed_sites


    def fed_datasets(self) -> FedDatasets:
        """Where the datasets of device-fed loaders come from, across modules."""
        if self._fed_datasets is None:
            fed = FedDatasets()
            sites = self.fed_sites()
            for path in sorted(self.summaries):
                for entry in self.summaries[path].get("datasets", ()):
                    if entry["fed"] or entry["loader"] in sites:
                        for source in entry["sources"]:
                            self._mark_source(source, path, fed, 0)
            self._fed_datasets = fed
        return self._fed_datasets

    def _mark_source(self, value: dict, path: str, fed: FedDatasets, depth: int) -> None:
        key = json.dumps([value, path], sort_keys=True)
        if depth > _MAX_DEPTH or key in fed.seen:
            return
        fed.seen.add(key)
        kind = value.get("k")
        if kind == "param":  # what each call site passes for it, and that argument's own sources
            ref, index = value["fn"], value["i"]
            record = self.function(*ref.split(":", 1))
            name = record["params"][index] if record and index < len(record["params"]) else None
            for caller_path, call, shift in self.callers(ref):
                position = index - shift
                if position < 0 or call["star"]:
                    continue
                if position < len(call["args"]):
                    slot, passed = position, call["args"][position]
                elif name in call["kwargs"]:
                    slot, passed = name, call["kwargs"][name]
                else:
                    continue
                fed.arguments.setdefault((caller_path, call["seq"]), set()).add(slot)
                self._mark_source(passed, caller_path, fed, depth + 1)
        elif kind == "instance":
            self._mark_class(*value["cls"].split(":", 1), fed, 0)
        elif kind == "call":
            found = self.resolve_name(value["fn"], path)
            if found is not None and found[0] == "class":
                self._mark_class(found[1], found[2], fed, 0)
            elif found is not None and found[0] == "function":  # a helper elsewhere builds the dataset
                self._mark_source(self.function(found[1], found[2])["returns"], found[1], fed, depth + 1)

    def _mark_class(self, path: str, cls: str, fed: FedDatasets, depth: int) -> None:
        if f"{path}:{cls}" in fed.classes or depth > 6:
            return
        fed.classes.add(f"{path}:{cls}")
        record = self.summaries[path]["classes"].get(cls)
        if record is None:
            return
        getitem = self.function(path, f"{cls}.__getitem__")
        if getitem is not None:
            self._mark_callees(path, getitem, fed, 0)
        for base in record["bases"]:  # the base's `__init__` and `__getitem__` run for it too
            found = self.class_of(base, path)
            if found is not None:
                self._mark_class(*found, fed, depth + 1)

    def _mark_callees(self, path: str, record: dict, fed: FedDatasets, depth: int) -> None:
        """Project functions a dataset's `__getitem__` calls (two levels down)."""
        for callee in record["callees"]:
            target = self.call_target(callee, path)
            if target is None or target[1] is None:
                continue
            ref = f"{target[0]}:{self._qual_of(target)}"
            if ref not in fed.functions:
                fed.functions.add(ref)
                if depth < 1:
                    self._mark_callees(target[0], target[1], fed, depth + 1)

    def class_converts(self, path: str, cls: str, depth: int = 0) -> bool:
        """Does the class's `__getitem__` (its own, else a project base's) make float images?"""
        record = self.summaries[path]["classes"].get(cls)
        if record is None or depth > 6:
            return False
        if record.get("getitem") is not None:
            return record["getitem"]
        return any(self.class_converts(*found, depth + 1) for base in record["bases"] if (found := self.class_of(base, path)))


@dataclass
class FedDatasets:
    classes: set[str] = field(default_factory=set)  # "path:Class"
    functions: set[str] = field(default_factory=set)  # "path:qual"
    arguments: dict[tuple[str, int], set] = field(default_factory=dict)  # (path, call seq) -> positions / keywords
    seen: set[str] = field(default_factory=set)


def _strip(table: dict[str, list[tuple]]) -> dict[str, list[tuple[str, dict, int]]]:
    return {ref: [(path, call, shift) for path, _, call, shift in entries] for ref, entries in table.items()}


def _loader_sites(value: dict) -> list[str]:
    if value.get("k") == "loader":
        return value["sites"]
    if value.get("k") == "item":
        return _loader_sites(value["of"])
    return []
