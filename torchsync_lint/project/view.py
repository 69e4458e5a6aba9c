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

Every answer is memoised, cycles answer "unknown" (or "not per step") while they are open, and
chains are cut at a fixed depth: unknown stays silent. An answer is reused only where a fresh
computation gives the same one (memo.py), so no answer depends on which question came first. A
view holds one connected component of the import graph (project/session.py); the session
``settle()``s it once, in a fixed order, and lints every file of the component against it,
sharing its memos (so which file is linted first, in which process, changes nothing). A view
answers one question at a time: it serves one thread, as its Session does (the verifier's
threads each make their own).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torchsync_lint.project.engines import EngineAnswers
from torchsync_lint.project.feeds import FedDatasets, FeedAnswers
from torchsync_lint.project.layout import Layout
from torchsync_lint.project.memo import EVERY_ENTRY, CycleMemo, ReadLog
from torchsync_lint.project.objects import ObjectAnswers
from torchsync_lint.project.trainer_models import TrainerModels
from torchsync_lint.project.values import MAX_RESOLVE_DEPTH, ValueAnswers, passed_slot

# The format of the summaries this view reads (project/summary.py writes it; part of their
# cache key, so it lives here, where no parser is imported).
SUMMARY_VERSION = 25

_MAX_DEPTH = 12
_MAX_NAME_DEPTH = 6  # re-exports and inherited methods followed
_MAX_BASES = 6  # levels of project base classes followed


class CallSite:
    """`path:line` of a call record, the line read when the text is shown: a call's line
    costs a position (often Python's parse of its module), and only a finding's message
    shows it."""

    __slots__ = ("path", "call")

    def __init__(self, path: str, call: dict) -> None:
        self.path, self.call = path, call

    def __str__(self) -> str:
        return f"{self.path}:{self.call['line']}"


class ProjectView(ValueAnswers, FeedAnswers, ObjectAnswers, TrainerModels, EngineAnswers):
    def __init__(self, layout: Layout, summaries: dict[str, dict], lazy: Callable[[str], dict] | None = None) -> None:
        self.layout = layout
        self.summaries = summaries  # relpath -> summary
        self._lazy = lazy  # relpath -> name -> import name, of its `_LazyModule` import structure (project/outline.py)
        # Memos, each keeping only answers that do not depend on which question came first
        # (memo.py): every module's lint of this component shares them.
        self._names = CycleMemo(_MAX_NAME_DEPTH - 1)  # (import name, path) -> what it is (the limit: see _resolve_name)
        self._callers: dict[str, list[tuple[str, dict, int]]] | None = None
        self._log = ReadLog()  # what each answer read of the callers table while _caller_table builds it
        self._value_keys: dict[int, tuple[dict, str]] = {}  # id -> (abstract value, its canonical text)
        self._forget_answers()  # (the memos of the answers that read the callers table)
        self._children: dict[str, list[str]] | None = None  # class ref -> direct project subclasses
        self._methods_by_name: dict[str, list[str]] | None = None  # method -> refs of module classes defining it
        self._registrations: dict[tuple, list[dict]] | None = None  # registry value -> registered classes/functions
        self._records: dict[str, dict[int, dict]] = {}  # path -> seq -> call record
        self._methods: frozenset[str] | None = None  # see _method_names

    # -- names --------------------------------------------------------------------------------
    def resolve_name(self, dotted: str, from_path: str, depth: int = 0) -> tuple | None:
        """What an import name written in ``from_path`` is: ("function", path, qual),
        ("class", path, qual), ("value", path, name), ("module", path, ""); None when it is not
        the project's own. Re-exports (`from .engine import f` in a package's __init__) are
        followed."""
        key = (dotted, from_path)
        entry = self._names.known(key, depth)  # (asked of nearly every name: the common hit inline)
        if entry is not None:
            return entry[0]
        return self._names.solve(key, lambda: self._resolve_name(dotted, from_path, depth), None, depth)  # (a re-export cycle: none)

    def _resolve_name(self, dotted: str, from_path: str, depth: int) -> tuple | None:
        if depth >= _MAX_NAME_DEPTH:
            self._names.truncated()
            return None
        if dotted.startswith("*"):  # a name from one of the module's `from m import *`
            head, dot, tail = dotted[1:].partition(".")
            binding = self.star_binding(from_path, head)
            return self.resolve_name(binding + dot + tail, from_path, depth + 1) if binding else None
        located = self.layout.resolve_in(dotted, from_path)
        if located is not None:
            path = self.layout.relpath(located[0])
            if path in self.summaries:
                return self._member(path, located[1], depth)
        return None

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
        lazy = self._lazy(path) if self._lazy is not None else {}
        if head in lazy:  # a package's `_LazyModule` structure: imported from its submodule when read
            return self.resolve_name(lazy[head] + (f".{tail}" if tail else ""), path, depth + 1)
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
                resolved = self.layout.resolve_in(alias, found[1])
                if resolved is not None:
                    return f"{self.layout.module_name(resolved[0])}" + (f".{resolved[1]}" if resolved[1] else "")
            if name in target["functions"] or name in target["classes"] or name in target["values"]:
                return f"{self.layout.module_name(self.layout.root / found[1])}.{name}"
            deeper = self.star_binding(found[1], name, depth + 1)
            if deeper is not None:
                return deeper
        return None

    def _inherited_method(self, path: str, cls: str, method: str, depth: int) -> tuple | None:
        self._names.reached(depth)  # (a level that tests the depth limit)
        for base in self.summaries[path]["classes"][cls]["bases"]:
            found = self.class_of(base, path)
            if found is not None and depth >= _MAX_NAME_DEPTH:
                self._names.truncated()
            elif found is not None:
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

    def library_bases(self, path: str, cls: str, depth: int = 0) -> list[str]:
        """The base classes of ``cls`` that are not the project's own (as written, canonical),
        through its project bases."""
        record = self.summaries[path]["classes"].get(cls)
        if record is None or depth > 6:
            return []
        out = []
        for base in record["bases"]:
            found = self.class_of(base, path)
            out += self.library_bases(*found, depth + 1) if found is not None else [] if base.startswith(":") else [base]
        return out

    def lineage(self, path: str, cls: str) -> list[tuple[str, str, dict]]:
        """(path, class, record) of ``cls`` and of its project base classes, depth first and
        left to right (each once, at most _MAX_BASES levels up): the order Python looks
        attributes up in, for hierarchies without diamonds."""
        out: list[tuple[str, str, dict]] = []
        seen: set[tuple[str, str]] = set()

        def visit(p: str, c: str, depth: int) -> None:
            record = self.summaries[p]["classes"].get(c)
            if record is None or depth > _MAX_BASES or (p, c) in seen:
                return
            seen.add((p, c))
            out.append((p, c, record))
            for base in record["bases"]:
                found = self.class_of(base, p)
                if found is not None:
                    visit(*found, depth + 1)

        visit(path, cls, 0)
        return out

    def class_list(self, path: str, cls: str, field: str) -> list:
        """A class's list ``field``, with those of its project bases."""
        return sorted({item for _, _, record in self.lineage(path, cls) for item in record.get(field, ())})

    def class_getitem_flag(self, path: str, cls: str, flag: str) -> bool:
        """A flag of the `__getitem__` the class runs (its own, else the first project base's
        that has one): "getitem_plain", free of calls (items already in memory);
        "getitem_device", items of tensors the class keeps on the device."""
        for _, _, record in self.lineage(path, cls):
            found = record.get(flag)
            if found is not None:
                return found
        return False

    def class_flag(self, path: str, cls: str, flag: str) -> bool:
        """A class's "module"/"lightning" flag, through project base classes."""
        return any(record.get(flag) for _, _, record in self.lineage(path, cls))

    # -- callers ------------------------------------------------------------------------------
    def call_record(self, path: str, seq: int) -> dict | None:
        """The summary's record of the call at ``seq`` in module ``path`` (None: not recorded)."""
        summary = self.summaries.get(path)
        if summary is None:
            return None
        by_seq = self._records.get(path)
        if by_seq is None:
            by_seq = self._records[path] = {c["seq"]: c for c in summary["calls"]}
        return by_seq.get(seq)

    def callers(self, ref: str) -> list[tuple[str, dict, int]]:
        """(caller's path, call record, how many leading parameters the call fills itself).

        Calls whose callee is named by import or within the module are indexed first; calls of
        objects (a method of what a parameter receives, of what `self.<attr>` holds) are then
        resolved against that first index, and every answer computed on the way is dropped:
        the index, and so every answer, is the same whichever question built it."""
        if self._callers is None:
            self._callers = self._caller_table()
        self._log.read(ref)
        return self._callers.get(ref, [])

    def _caller_table(self) -> dict[str, list[tuple[str, dict, int]]]:
        """Every call site of every project function, built whole before any answer reads it.
        Calls named by import or within the module (and `self.m()`'s overrides in subclasses)
        are indexed first. Calls of objects (a method of what a parameter receives `^`, of what
        `self.<attr>` holds `~`, `self.m()` inherited `@`, a class or function picked from a dict
        or a module `%`) find their targets through values, i.e. through this table: they are
        added in rounds, each against the complete table of the round before with fresh memos,
        until it stops changing. Entries are sorted by (path, call index).

        Every answer is a function of the summaries and of the entries it reads through
        ``callers`` (memo hits included: memo.ReadLog). So a round computes again only the calls
        whose last computation read an entry the round before changed; the others would find
        the same targets. A round with none to compute is the fixed point."""
        direct: dict[str, list[tuple]] = {}
        through: list[tuple[str, int, dict]] = []
        for path in sorted(self.summaries):
            for n, call in enumerate(self.summaries[path]["calls"]):
                for override in self.overrides(call.get("dispatch")):
                    direct.setdefault(override, []).append((path, n, call, 1))
                if call["callee"].startswith(("^", "~", "@", "%")) or self._returned_maker(call["callee"], path):  # resolving these needs values
                    through.append((path, n, call))
                    continue
                for target in self.call_targets_of(call["callee"], path, call["bound"]):
                    direct.setdefault(target[0], []).append((path, n, call, target[1]))
        for entries in direct.values():
            entries.sort(key=lambda e: (e[0], e[1]))
        table = direct
        targets: list[list] = [[] for _ in through]
        reads: list[set] = [set() for _ in through]
        stale = range(len(through))  # the calls whose targets a round computes (again)
        for _ in range(_MAX_DEPTH if through else 0):
            self._callers = _strip(table)
            self._forget_answers()
            for i in stale:
                path, _, call = through[i]
                targets[i], reads[i] = self._log.reading(partial(self.call_targets_of, call["callee"], path, call["bound"], call.get("value")))
            grown = {ref: list(entries) for ref, entries in direct.items()}
            for (path, n, call), found in zip(through, targets):
                for target in found:
                    grown.setdefault(target[0], []).append((path, n, call, target[1]))
            for entries in grown.values():
                entries.sort(key=lambda e: (e[0], e[1]))
            if grown == table:
                break
            changed = {ref for ref in grown.keys() | table.keys() if grown.get(ref) != table.get(ref)}
            table = grown
            stale = [i for i, read in enumerate(reads) if EVERY_ENTRY in read or not changed.isdisjoint(read)]
            if not stale:
                break
        self._forget_answers()
        return _strip(table)

    def _forget_answers(self) -> None:
        """Drop every memo that reads the callers table."""
        self._resolved = CycleMemo(MAX_RESOLVE_DEPTH, self._log)  # (value's key, path, bind's key) -> resolved value
        self._hot = CycleMemo(0, self._log)  # ref -> (CallSite, gated) | None
        self._flags = CycleMemo(_MAX_DEPTH, self._log)  # (ref, "step"/"epoch") / ("path@loop", "loop") -> bool
        self._fed_sites: set[str] | None = None
        self._fed_datasets: FedDatasets | None = None
        self._trainer_models = None  # (project/trainer_models.py: resolves models through the table)
        self._engine_functions = None  # (project/engines.py: resolves process functions through it)
        self._engine_instances = None

    def settle(self) -> ProjectView:
        """Compute, in a fixed order, what every file's lint shares."""
        self.callers("")
        self.fed_datasets()
        return self

    def call_target_of(self, callee: str, from_path: str, bound: bool, value: dict | None = None) -> tuple[str, int] | None:
        """The one project function a call runs (see call_targets_of), or None when it may
        run several or none."""
        found = self.call_targets_of(callee, from_path, bound, value)
        return found[0] if len(found) == 1 else None

    def call_targets_of(self, callee: str, from_path: str, bound: bool, value: dict | None = None) -> list[tuple[str, int]]:
        """("path:Qual" of each project function a callee may name, how many leading parameters
        the call fills itself): a class is its `__init__`; an instance called like a function,
        its `__call__` or `forward`; a function passed or stored as a value, itself; `%`, the
        called ``value`` (a class or function picked from a dict or a module by the config)."""
        if callee[:1] in _OBJECT_CALLS and _called_method(callee) not in self._method_names():
            return []  # a method no project class defines (`x.view(...)` of a parameter): nothing to resolve
        if callee.startswith("%"):  # `%`: calling the value; `%.m`: its method `m`
            method = callee[2:] if callee.startswith("%.") else "__call__"
            return self.methods_of_value(self.resolve(value, from_path), method, from_path) if value else []
        if callee.startswith("^"):
            ref, _, rest = callee[1:].partition("#")
            index, _, method = rest.partition(".")
            passed = self.param_value(ref, int(index)) if index.isdigit() else None
            return self.methods_of_value(passed, method, ref.split(":", 1)[0]) if passed is not None else []
        if callee.startswith("~"):
            return self.stored_callees(callee[1:])
        if callee.startswith("!"):  # `super().m()`: the first project base that defines m
            cls_ref, _, method = callee[1:].rpartition(".")
            path, _, cls = cls_ref.partition(":")
            member = self._inherited_method(path, cls, method, 0) if path in self.summaries and cls in self.summaries[path]["classes"] else None
            return [(f"{member[1]}:{member[2]}", 1)] if member is not None and member[0] == "function" else []
        if callee.startswith("@"):  # `self.m()` inherited from a project base class
            cls_ref, _, method = callee[1:].rpartition(".")
            path, _, cls = cls_ref.partition(":")
            if path not in self.summaries:
                return []
            member = self._member(path, f"{cls}.{method}", 0)
            if member is not None and member[0] == "function":
                return [(f"{member[1]}:{member[2]}", 1)]
            stored = self.class_attr(path, cls, method)  # `self.get_batch(n)`: a base's __init__ stored it
            return self.methods_of_value(stored, "__call__", path) if stored is not None else []
        if callee.startswith(":"):  # a function of the calling module itself
            qual = callee[1:]
            if self.function(from_path, qual) is None:
                return []
            return [(f"{from_path}:{qual}", (1 if bound else 0))]
        found = self.resolve_name(callee, from_path)
        if found is None and callee.endswith(".__call__"):  # a module instance called: its forward
            found = self.resolve_name(callee[: -len("__call__")] + "forward", from_path)
        if found is None:
            return self._methods_of_returned(callee, from_path)
        if found[0] == "class":
            init = self._member(found[1], f"{found[2]}.__init__", 0)
            return [(f"{init[1]}:{init[2]}", 1)] if init and init[0] == "function" else []
        if found[0] != "function":
            return []
        fpath, qual = found[1], found[2]
        if qual.endswith(".__call__") and qual not in self.summaries[fpath]["functions"]:
            return []
        record = self.function(fpath, qual)
        return [(f"{fpath}:{qual}", (record["bound"] if bound else 0))]

    def _methods_of_returned(self, callee: str, from_path: str) -> list[tuple[str, int]]:
        """`nets = build_model(args)` then `nets(x)` / `nets.encode(x)`: the summary names the
        callee by the call that made the object (`models.build_model.__call__`), and when that
        call runs a project function, the method is one of what the function returns (a
        `Generator(...)` it builds, one of several by the config)."""
        maker = self._returned_maker(callee, from_path)
        if maker is None:
            return []
        returned = self.function(maker[1], maker[2])["returns"]
        return self.methods_of_value(self.resolve(returned, maker[1]), callee.rpartition(".")[2], maker[1])

    def _returned_maker(self, callee: str, from_path: str) -> tuple | None:
        """The project function (as resolve_name names it) whose returned object ``callee``
        calls a method of, when the callee names no project function itself."""
        if callee[:1] in "^~@%!:*" or self.resolve_name(callee, from_path) is not None:
            return None
        head, _, method = callee.rpartition(".")
        if not head or method == "__call__" and self.resolve_name(head + ".forward", from_path) is not None:
            return None
        maker = self.resolve_name(head, from_path)
        if maker is None or maker[0] != "function":
            return None
        record = self.function(maker[1], maker[2])
        return maker if record and record.get("returns") else None

    def _method_names(self) -> frozenset[str]:
        """Every name a project function of the component is defined under last (`m` of
        `Cls.m`), the keys of its attribute dicts, and `__call__`: a method of an object that no class here defines runs no
        project code (methods_of_value finds a method by its name in a project class)."""
        if self._methods is None:
            self._methods = frozenset({"__call__", *(q.rpartition(".")[2] for s in self.summaries.values() for q in s["functions"]), *(k for s in self.summaries.values() for k in s.get("dict_attrs", ()))})
        return self._methods

    def call_target(self, callee: str, from_path: str) -> tuple[str, dict] | None:
        """("path:Qual", record) of the project function a callee names (see call_target_of)."""
        found = self.call_target_of(callee, from_path, True)
        if found is None:
            return None
        record = self.function(*found[0].split(":", 1))
        return (found[0], record) if record is not None else None

    # -- per-step code ----------------------------------------------------------------------------
    def hot(self, ref: str) -> tuple[CallSite, bool] | None:
        """(where it is called from every step, gated) when a per-step loop of another module
        calls ``ref`` (directly, or through functions that are per step themselves)."""
        if self._callers is None:
            self.callers("")
        return self._hot.solve(ref, lambda: self._find_hot(ref), None)  # (a call cycle: not per step through itself)

    def _find_hot(self, ref: str) -> tuple[CallSite, bool] | None:
        run = self.trainer_run_site(ref)
        if run is not None:
            return CallSite(*run), False  # a model's forward that a library trainer runs every step
        found = None
        for caller_path, call, _ in self.callers(ref):
            if call.get("needs") and self._never_passed(*call["needs"]):
                continue  # in a branch that only a parameter nobody passes turns on
            if call["hot"] == "yes" or (call.get("loop") is not None and self.loop_steps(caller_path, call["loop"])):
                found = (CallSite(caller_path, call), call["gated"])
            elif call["hot"] == "caller" and call["caller"] and not self.function_flag(call["caller"], "epoch"):
                # (a function that runs a whole pass calls this once per pass, not per step)
                outer = self.hot(call["caller"])
                if outer is not None:
                    found = (CallSite(caller_path, call), outer[1] or call["gated"])
            if found is not None and not found[1]:
                break
        return found

    def _never_passed(self, ref: str, index: int) -> bool:
        """Do the function's callers (there are some) all leave parameter ``index`` unset?"""
        record = self.function(*ref.split(":", 1))
        callers = self.callers(ref)
        if record is None or not callers or index >= len(record["params"]):
            return False
        name = record["params"][index]
        return not any(call["star"] or passed_slot(call, index, name, shift) is not None for _, call, shift in callers)

    def loop_steps(self, path: str, loop: int) -> bool:
        """Does the loop ``loop`` (its seq) of ``path`` run a training step through the project
        code it calls (`policy.train(buffer)` runs backward and an optimizer step), without
        calling a function that runs a whole pass over a loader (an epoch loop)?"""
        return self._flags.solve((f"{path}@{loop}", "loop"), lambda: self._loop_steps(path, loop), False)

    def _loop_steps(self, path: str, loop: int) -> bool:
        calls = [c for c in self.summaries[path]["calls"] if c.get("loop") == loop]
        refs = [t[0] for c in calls for t in self.call_targets_of(c["callee"], path, c["bound"], c.get("value"))]
        refs += [o for c in calls for o in self.overrides(c.get("dispatch"))]
        return any(self.function_flag(r, "step") for r in refs) and not any(self.function_flag(r, "epoch") for r in refs)

    def function_flag(self, ref: str, flag: str, depth: int = 0) -> bool:
        """A function's "step" / "epoch" flag, through the project functions it calls."""
        if self._callers is None:
            self.callers("")
        return self._flags.solve((ref, flag), lambda: self._function_flag(ref, flag, depth), False, depth)  # (recursion: not through itself)

    def _function_flag(self, ref: str, flag: str, depth: int) -> bool:
        path, qual = ref.split(":", 1)
        record = self.function(path, qual)
        result = bool(record and record[flag])
        if record and not result and depth >= _MAX_DEPTH and record["callees"]:
            self._flags.truncated()
        if record and not result and depth < _MAX_DEPTH:
            for callee in record["callees"]:
                target = self.call_target(callee, path)
                if target is not None:
                    if self.function_flag(target[0], flag, depth + 1):
                        result = True
                        break
        return result


_OBJECT_CALLS = frozenset("^~%")  # callees that call a method of a value (see call_targets_of)


def _called_method(callee: str) -> str:
    """The method an object's call runs: `m` of `^<ref>#<i>.m`, `~<ref>.<attr>.m` or `%.m`;
    `__call__` when the object itself is called (`^<ref>#<i>`, `~<ref>.<attr>`, `%`)."""
    if callee[0] == "^":
        rest = callee.partition("#")[2]
    elif callee[0] == "~":
        rest = callee.partition(":")[2].partition(".")[2]  # (after the class: `<attr>[.m]`)
    else:
        rest = callee[1:]
    return rest.partition(".")[2] or "__call__"


def _strip(table: dict[str, list[tuple]]) -> dict[str, list[tuple[str, dict, int]]]:
    return {ref: [(path, call, shift) for path, _, call, shift in entries] for ref, entries in table.items()}

