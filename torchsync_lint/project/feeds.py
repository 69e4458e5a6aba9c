"""The project view's answers about data loaders: which DataLoaders feed the device (a loop in
some module copies their batches there, or hands them to accelerate / Lightning / Fabric), and,
back from those loaders, the dataset classes they read, the functions those classes'
`__getitem__` calls, and the arguments of calls that become their datasets or transforms.
A mixin of ProjectView (view.py), which provides ``summaries``, ``resolve``, ``callers``,
``resolve_name``, ``class_of``, ``function`` and ``call_target``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from torchsync_lint.project import absval
from torchsync_lint.project.memo import EVERY_ENTRY
from torchsync_lint.project.values import passed_slot

_MAX_DEPTH = 12


class FeedAnswers:
    # -- loaders --------------------------------------------------------------------------------
    def fed_sites(self) -> set[str]:
        """DataLoader sites whose batches some loop moves to the device (or a trainer takes)."""
        if self._callers is None:
            self.callers("")  # the call index first: building it drops earlier answers
        self._log.read(EVERY_ENTRY)  # (kept apart from the memos, and it reads every feed's callers)
        if self._fed_sites is None:
            self._fed_sites = set()
            for path in sorted(self.summaries):
                for feed in self.summaries[path]["feeds"]:
                    if feed.get("via") and not any(self._runs_a_step(callee, path) for callee in feed["via"]):
                        continue  # its loop calls other modules' functions, none of them a step
                    value = self.resolve(feed["iter"], path)
                    self._fed_sites.update(_loader_sites(value))
        return self._fed_sites


    def _runs_a_step(self, callee: str, path: str) -> bool:
        """Is the project function ``callee`` (called from ``path``) step-like: does it run a
        model's forward, a backward or an optimizer step, itself or through what it calls?"""
        target = self.call_target_of(callee, path, False)
        return target is not None and self.function_flag(target[0], "step")

    def fed_datasets(self) -> FedDatasets:
        """Where the datasets of device-fed loaders come from, across modules."""
        if self._callers is None:
            self.callers("")
        self._log.read(EVERY_ENTRY)
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
                found = passed_slot(call, index, name, shift) if not call["star"] else None
                if found is None:
                    continue
                slot, passed = found
                fed.arguments.setdefault((caller_path, call["seq"]), set()).add(slot)
                self._mark_source(passed, caller_path, fed, depth + 1)
        elif kind == "instance":
            self._mark_class(*value["cls"].split(":", 1), fed, 0)
        elif kind == "elem":  # `size, train_ds, test_ds = get_dataset()`: the helper built it
            makers = self._dataset_makers(value["of"], path)
            for ref in makers:
                fed.functions.add(ref)
                fpath, qual = ref.split(":", 1)
                self._mark_source(absval.element(self.function(fpath, qual)["returns"], value["i"]), fpath, fed, depth + 1)
            if not makers:
                self._mark_source(value["of"], path, fed, depth + 1)
        elif kind == "vcall":  # `all_datasets[name]()`: each function the picked value may be
            for ref in self._dataset_makers(value, path):
                fed.functions.add(ref)
                fpath, qual = ref.split(":", 1)
                self._mark_source(self.function(fpath, qual)["returns"], fpath, fed, depth + 1)
        elif kind == "sym":  # a module-level value of another module (a transform pipeline, a dataset)
            found = self.resolve_name(value["name"], path)
            if found is not None and found[0] == "value":
                fed.values.add(f"{found[1]}:{found[2]}")
                self._mark_source(self.summaries[found[1]]["values"][found[2]], found[1], fed, depth + 1)
        elif kind == "call":
            found = self.resolve_name(value["fn"], path)
            if found is not None and found[0] == "class":
                self._mark_class(found[1], found[2], fed, 0)
            elif found is not None and found[0] == "function":  # a helper elsewhere builds the dataset (or its transform)
                fed.functions.add(f"{found[1]}:{found[2]}")
                self._mark_source(self.function(found[1], found[2])["returns"], found[1], fed, depth + 1)

    def _dataset_makers(self, call: dict, path: str) -> list[str]:
        """The project functions a call value runs ("path:qual"): `get_dataset()` by name, or
        `all_datasets[name]()` of a value that may be one of several functions."""
        if call.get("k") == "call":
            found = self.resolve_name(call["fn"], path)
            return [f"{found[1]}:{found[2]}"] if found is not None and found[0] == "function" else []
        if call.get("k") != "vcall":
            return []
        picked = self.resolve(call["of"], path)
        alternatives = picked["of"] if picked.get("k") == "any" else [picked]
        return sorted({alt["ref"] for alt in alternatives if alt.get("k") == "func" and self.function(*alt["ref"].split(":", 1)) is not None})

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
            if target is None:
                continue
            ref, callee_record = target
            if ref not in fed.functions:
                fed.functions.add(ref)
                if depth < 1:
                    self._mark_callees(ref.split(":", 1)[0], callee_record, fed, depth + 1)

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
    values: set[str] = field(default_factory=set)  # "path:name": module-level values (a pipeline)
    arguments: dict[tuple[str, int], set] = field(default_factory=dict)  # (path, call seq) -> positions / keywords
    seen: set[str] = field(default_factory=set)


def _loader_sites(value: dict) -> list[str]:
    if value.get("k") == "loader":
        return value["sites"]
    if value.get("k") == "item":
        return _loader_sites(value["of"])
    if value.get("k") == "any":
        return [site for alt in value["of"] for site in _loader_sites(alt)]
    return []
