"""The project view's values: what a parameter receives, what a function returns, and any
abstract value (absval.py) with its symbolic parts resolved against the other modules'
summaries. A call followed for its result binds its callee's parameters to its own arguments
(``bind``), so a helper's result is read per call. A mixin of ProjectView (view.py), which
provides ``summaries``, ``callers``, ``resolve_name``, ``function``, ``call_target_of``,
``call_targets_of``, ``class_flag``, ``class_attr``, ``attribute_value``, ``items_of``,
``methods_of_value`` and ``members_of_module``.
"""

from __future__ import annotations

import json

from torchsync_lint.analysis.kinds import DEVICE_VALUES, Kind
from torchsync_lint.knowledge.torch import MODEL_METHODS_KEEPING_MODEL
from torchsync_lint.project import absval

_KEY_TEXT = json.JSONEncoder(sort_keys=True)  # (made once: json.dumps with an option makes one per call)

MAX_RESOLVE_DEPTH = 12  # nested resolutions followed (what is left deeper is unknown)


def _moved(value: dict) -> dict:
    """`x.to(device)` of a resolved value: a module placed, a tensor copied to the device."""
    kind = value.get("k")
    if kind == "instance":
        return {**value, "placed": True}
    if kind == "any":
        return absval.join_abs([_moved(alt) for alt in value["of"]])
    if absval.kind_of(value) is Kind.CONTAINER:
        return {"k": "device-container"}  # a dict-like batch's own `.to()`: the same container, placed
    if kind in ("device", "host-tensor", "like") or absval.kind_of(value) in (Kind.DEVICE, Kind.HOST_TENSOR):
        return {"k": "device"}  # (a "host" value is no tensor: an object of unknown type, moved)
    return {"k": "moved"}


def call_bindings(ref: str, record: dict, shift: int, args: list[dict], kwargs: dict) -> dict:
    """What one call passes for each parameter of the function ``ref`` (its record; ``shift``:
    how many leading parameters the call fills itself)."""
    bind = {}
    params = record["params"]
    for i, arg in enumerate(args):
        if i + shift < len(params):
            bind[f"{ref}#{i + shift}"] = arg
    for name, arg in kwargs.items():
        if name in params:
            bind[f"{ref}#{params.index(name)}"] = arg
    return bind


def passed_slot(call: dict, index: int, name: str | None, shift: int) -> tuple[int | str, dict] | None:
    """What one call record passes for parameter ``index`` (named ``name``) of its callee, of
    which the call fills ``shift`` leading parameters itself (`self`): (the position or the
    keyword it is passed at, the value), or None when it passes nothing there. A starred call
    and `self` itself are the caller's to check."""
    position = index - shift
    if position < 0:
        return None
    if position < len(call["args"]):
        return position, call["args"][position]
    if name is not None and name in call["kwargs"]:
        return name, call["kwargs"][name]
    return None


class ValueAnswers:
    def param_value(self, ref: str, index: int, bind: dict | None = None) -> dict | None:
        """What the project's call sites of ``ref`` pass for parameter ``index`` (None: no call
        site we can see); ``bind`` answers for the parameters of one call being followed. The
        module's own call sites are included: a join is unchanged by seeing one twice, and a
        summary's parameters need them (`main()` calls `run(loader)`, which hands `loader` to
        another module)."""
        if bind is not None and f"{ref}#{index}" in bind:
            return bind[f"{ref}#{index}"]
        if bind is not None and f"{ref}#closed" in bind:
            return None  # a method never called on the one object being followed
        path, qual = ref.split(":", 1)
        record = self.function(path, qual)
        if record is None:
            return None
        name = record["params"][index] if index < len(record["params"]) else None
        passed = []
        for caller_path, call, shift in self.callers(ref):
            if call["star"] and name in call["kwargs"]:
                passed.append(self.resolve(call["kwargs"][name], caller_path))  # `f(inputs=x, **kw)`: `**kw` cannot pass it again
                continue
            if call["star"]:
                return absval.UNKNOWN
            if index < shift:
                return None  # `self`
            slot = passed_slot(call, index, name, shift)
            if slot is not None:
                passed.append(self.resolve(slot[1], caller_path))
        if not passed and index == 0:
            return self.engine_instance(ref)  # `def train(engine, batch)` an ignite engine runs: that engine
        return absval.join_abs(passed) if passed else None

    def star_value(self, ref: str, keyword: bool) -> dict | None:
        """What the project's call sites of ``ref`` pass into its `**kwargs` (``keyword``) or
        `*args`: the join of the arguments no named parameter takes (None: no call site)."""
        path, qual = ref.split(":", 1)
        record = self.function(path, qual)
        if record is None:
            return None
        named = set(record["params"]) | set(record["kwonly"])
        passed = []
        for caller_path, call, shift in self.callers(ref):
            # a call that also passes `*args`/`**kwargs` adds unknown values to what it spells out
            if keyword:
                extra = [v for name, v in call["kwargs"].items() if name not in named]
            else:
                extra = call["args"][max(len(record["params"]) - shift, 0):]
            passed += [self.resolve(v, caller_path) for v in extra]
        return absval.join_abs(passed) if passed else None

    def returns(self, path: str, qual: str) -> dict:
        record = self.function(path, qual)
        return self.resolve(record["returns"], path) if record else absval.UNKNOWN

    def resolve(self, value: dict, from_path: str, depth: int = 0, bind: dict | None = None) -> dict:
        """``value`` with its symbolic parts (parameters, calls, attributes and names of other
        modules) replaced by what the project says they are. ``bind`` holds what one call being
        followed passes for its callee's parameters (`"<ref>#<i>"` -> value)."""
        if self._callers is None:
            self.callers("")  # the call index first: no answer is computed on a partial one
        kind = value.get("k")
        if depth > MAX_RESOLVE_DEPTH:
            if kind in absval.SYMBOLIC or kind in ("tuple", "dict", "instance"):
                self._resolved.truncated()  # (what its parts are is left unresolved here)
            return absval.UNKNOWN if kind in absval.SYMBOLIC else value
        self._resolved.reached(depth)
        if kind in ("tuple", "dict", "item", "like", "elem", "any", "instance", "params"):
            return self._resolve_parts(value, from_path, depth, bind)
        if kind == "to":
            moved = _moved(self.resolve(value["of"], from_path, depth + 1, bind))
            if moved.get("k") == "moved" and value.get("kind") == "device":
                return {"k": "device"}  # what the module alone knew (a batch of its own loop, copied)
            return moved
        if kind not in ("param", "call", "sym", "attr", "member", "vcall", "entry"):
            return value
        key = (self._value_key(value), from_path, self._value_key(bind) if bind is not None else None)
        return self._resolved.solve(key, lambda: self._resolve_symbolic(value, from_path, depth, bind), absval.UNKNOWN, depth)

    def _value_key(self, value: dict) -> str:
        """``value``'s canonical text (its memo key), made once per value object: the same
        summary values are resolved again for every module linted, and one call's ``bind``
        for every value followed through it (abstract values and binds are never changed
        once resolved; the entry keeps ``value`` alive, so its id stays its own)."""
        entry = self._value_keys.get(id(value))
        if entry is None or entry[0] is not value:
            entry = self._value_keys[id(value)] = (value, _KEY_TEXT.encode(value))
        return entry[1]

    def _resolve_parts(self, value: dict, from_path: str, depth: int, bind: dict | None) -> dict:
        kind = value["k"]
        if kind == "tuple":
            return {"k": "tuple", "items": [self.resolve(v, from_path, depth + 1, bind) for v in value["items"]]}
        if kind == "dict":
            return {"k": "dict", "items": {k: self.resolve(v, from_path, depth + 1, bind) for k, v in value["items"].items()}}
        if kind == "any":
            return absval.join_abs([self.resolve(v, from_path, depth + 1, bind) for v in value["of"]])
        if kind == "instance":
            if not value.get("args") and not value.get("kwargs"):
                return value
            return {
                **value,
                "args": [self.resolve(v, from_path, depth + 1, bind) for v in value.get("args", ())],
                "kwargs": {k: self.resolve(v, from_path, depth + 1, bind) for k, v in value.get("kwargs", {}).items()},
            }
        inner = self.resolve(value["of"], from_path, depth + 1, bind)
        if inner.get("k") == "cycle" and kind != "to":
            return inner  # a tensor computed from the loop-carried value itself (absval: "cycle")
        if kind == "item":
            items = self.items_of(inner)  # an instance's `__iter__` yields, else the item form
            return {**items, **{k: v for k, v in value.items() if k not in ("k", "of")}} if items.get("k") == "item" else items
        if kind == "elem":
            found = absval.element(inner, value["i"])
            return found if found.get("k") != "elem" else absval.UNKNOWN
        return {**value, "of": inner}

    def _resolve_symbolic(self, value: dict, from_path: str, depth: int, bind: dict | None) -> dict:
        kind = value["k"]
        if kind == "param":
            passed = self.param_value(value["fn"], value["i"], bind)
            return passed if passed is not None else absval.UNKNOWN
        if kind == "attr":
            return self.attribute_value(self.resolve(value["of"], from_path, depth + 1, bind), value["name"], depth)
        if kind == "sym":
            found = self.resolve_name(value["name"], from_path)
            if found is None:
                return absval.UNKNOWN
            if found[0] == "value":
                return self.resolve(self.summaries[found[1]]["values"][found[2]], found[1], depth + 1)
            # an imported function, class or module, handed on as a value
            return {"function": {"k": "func", "ref": f"{found[1]}:{found[2]}"}, "class": {"k": "class", "ref": f"{found[1]}:{found[2]}"}, "module": {"k": "module", "path": found[1]}}[found[0]]
        if kind == "member":
            return self._member_value(self.resolve(value["of"], from_path, depth + 1, bind))
        if kind == "entry":
            if "key" in value or "keys" in value:  # `all_datasets["CIFAR10"]`, or one of an option's choices
                picked = self.resolve(value["of"], from_path, depth + 1, bind)
                keys = value["keys"] if "keys" in value else [value["key"]]
                if picked.get("k") != "dict":
                    return absval.UNKNOWN
                return absval.join_abs([picked["items"][k] for k in keys if k in picked["items"]])
            registered = self.registered_into(value["name"], from_path)
            if registered:
                return absval.join_abs(registered)  # one of the classes or functions registered into it
            picked = self.resolve(value["of"], from_path, depth + 1, bind)
            if picked.get("k") == "dict" and picked["items"]:
                return absval.join_abs(list(picked["items"].values()))  # a dict of another module, picked from
            return {"k": "like", "of": picked} if picked.get("k") != "unknown" else absval.UNKNOWN
        if kind == "vcall":
            args = [self.resolve(v, from_path, depth + 1, bind) for v in value.get("args", ())]
            kwargs = {k: self.resolve(v, from_path, depth + 1, bind) for k, v in value.get("kwargs", {}).items()}
            applied = self._apply(self.resolve(value["of"], from_path, depth + 1, bind), args, kwargs, depth)
            if absval.kind_of(applied) is Kind.UNKNOWN and value.get("kind", "unknown") != "unknown":
                return {"k": value["kind"]}  # `model(x)` of a picked module: a device value
            return applied
        return self._call_value(value, from_path, depth, bind)

    def _receiver_of(self, callee: str, from_path: str) -> dict | None:
        """What `self.<attr>` holds for a `~`/`@` callee that calls it directly."""
        if not callee.startswith(("~", "@")):
            return None
        cls_ref, _, attr = callee[1:].rpartition(".")
        path, _, cls = cls_ref.partition(":")
        if path not in self.summaries or "." in cls or cls not in self.summaries[path]["classes"]:
            return None
        return self.class_attr(path, cls, attr)

    def _forward_of_placed_parameter(self, callee: str, bind: dict | None) -> bool:
        """Is the callee `model(x)` of a parameter given a module that may be on the device
        (`def sample(model, x): model(x)`, handed a moved model)? Its output is a device tensor."""
        if not (callee.startswith("^") and callee.endswith(".__call__")):
            return False
        ref, _, rest = callee[1:].partition("#")
        index = rest.partition(".")[0]
        passed = self.param_value(ref, int(index), bind) if index.isdigit() else None
        return passed is not None and absval.kind_of(passed) in (Kind.MODEL, Kind.MOVED)

    def registered_into(self, name: str, from_path: str) -> list[dict]:
        """The classes and functions the project registers into the registry an import name
        names (`@registry.BOX_HEADS.register(...)` anywhere in the component)."""
        target = self.resolve_name(name, from_path)
        if target is None or target[0] != "value":
            return []
        if self._registrations is None:
            table: dict[tuple, list[dict]] = {}
            for path in sorted(self.summaries):
                for entry in self.summaries[path].get("registered", ()):
                    into = self.resolve_name(entry["into"], path)
                    if into is not None:
                        table.setdefault(into, []).append({"k": entry["k"], "ref": entry["ref"]})
            self._registrations = table
        return self._registrations.get(target, [])

    def _owned_by_module(self, callee: str) -> bool:
        """Is the object holding a `~`/`@` callee's attribute itself an nn.Module?"""
        path, _, cls = callee[1:].rpartition(".")[0].partition(":")
        return self.class_flag(path, cls, "module")

    def _member_value(self, base: dict) -> dict:
        if base.get("k") == "module":
            return self.members_of_module(base["path"])
        if base.get("k") == "any":
            return absval.join_abs([self._member_value(alt) for alt in base["of"]])
        return absval.UNKNOWN

    def _apply(self, callee: dict, args: list[dict], kwargs: dict, depth: int) -> dict:
        """What calling the resolved value ``callee`` with these (resolved) arguments gives."""
        kind = callee.get("k")
        if kind == "any":
            return absval.join_abs([self._apply(alt, args, kwargs, depth + 1) for alt in callee["of"]])
        if kind == "class":
            path, cls = callee["ref"].split(":", 1)
            if self.class_flag(path, cls, "loader"):
                return {"k": "loader", "sites": []}  # a project DataLoader subclass, picked by the config
            return {"k": "instance", "cls": callee["ref"], "module": self.class_flag(path, cls, "module"), "args": args, "kwargs": kwargs}
        if kind == "func":
            fpath, qual = callee["ref"].split(":", 1)
            record = self.function(fpath, qual)
            if record is None:
                return absval.UNKNOWN
            return self.resolve(record["returns"], fpath, depth + 1, call_bindings(callee["ref"], record, 0, args, kwargs))
        return absval.UNKNOWN

    def _call_value(self, value: dict, from_path: str, depth: int, bind: dict | None) -> dict:
        """What calling a project name returns, for these arguments: a class makes an instance
        holding them; a function's returns are read with its parameters bound to them; a
        generator yielding the items of one of its parameters iterates like that argument."""
        callee = value["fn"]
        args = [self.resolve(v, from_path, depth + 1, bind) for v in value.get("args", ())]
        kwargs = {k: self.resolve(v, from_path, depth + 1, bind) for k, v in value.get("kwargs", {}).items()}
        found = self.resolve_name(callee, from_path) if not callee.startswith(("^", "~")) else None
        if found is not None and found[0] == "class":
            if self.class_flag(found[1], found[2], "loader") and value.get("site"):
                return {"k": "loader", "sites": [value["site"]]}  # a project DataLoader subclass
            return {"k": "instance", "cls": f"{found[1]}:{found[2]}", "module": self.class_flag(found[1], found[2], "module"), "args": args, "kwargs": kwargs}
        receiver = self._receiver_of(callee, from_path)
        if receiver is not None and absval.kind_of(receiver) in (Kind.MODEL, Kind.CPU_MODEL, Kind.MOVED):
            # `self.model(x)`: the forward of a module held on the object; where its output
            # lives is the module's place (its body's submodules do not know it)
            on_device = absval.kind_of(receiver) is not Kind.CPU_MODEL or any(absval.kind_of(a) in DEVICE_VALUES for a in args)
            if not on_device and self._owned_by_module(callee):
                return absval.UNKNOWN  # a submodule built in `__init__` moves with its parent, whose place this does not know
            return {"k": "device" if on_device else "host-tensor"}
        target = self.call_target_of(callee, from_path, value.get("bound", True))
        if target is not None:
            fpath, qual = target[0].split(":", 1)
            record = self.function(fpath, qual)
            call_bind = None if value.get("star") else call_bindings(target[0], record, target[1], args, kwargs)
            if record["yields"] is not None and call_bind is not None and f"{target[0]}#{record['yields']}" in call_bind:
                return call_bind[f"{target[0]}#{record['yields']}"]  # `log_every(loader)`: iterates like `loader`
            returned = self.resolve(record["returns"], fpath, depth + 1, call_bind)
            if returned.get("k") == "cycle":
                return returned  # `step = train_step(..., step)` returning its argument: the loop's own value
            if absval.kind_of(returned) is Kind.UNKNOWN and value.get("kind", "unknown") != "unknown":
                return {"k": value["kind"]}  # what the calling module knew (a device model's forward)
            if value.get("kind") == "device" and returned.get("k") == "tuple":
                # `_, out = model(img)` of a device input: the elements the callee cannot place
                # are where the calling module knew the output is, as it would say alone
                return {"k": "tuple", "items": [item if absval.kind_of(item) is not Kind.UNKNOWN or item.get("k") == "cycle" else {"k": "device"} for item in returned["items"]]}
            if absval.kind_of(returned) is Kind.UNKNOWN and self._forward_of_placed_parameter(callee, bind):
                return {"k": "device"}
            return returned
        owner, _, method = callee.rpartition(".")
        cls = self.resolve_name(owner, from_path) if method in MODEL_METHODS_KEEPING_MODEL and found is None else None
        if cls is not None and cls[0] == "class" and self.class_flag(cls[1], cls[2], "module"):
            # `ConvNet().to(device)`: the module itself, placed
            return {"k": "instance", "cls": f"{cls[1]}:{cls[2]}", "module": True, "placed": True}
        if found is not None:
            return absval.UNKNOWN
        if self._forward_of_placed_parameter(callee, bind):
            return {"k": "device"}
        if value.get("kind", "unknown") == "unknown":
            return {"k": "object", "origin": callee} if not callee.startswith(("^", "~", "*", "@", "!", "%")) else absval.UNKNOWN  # a library's object
        return {"k": value["kind"]}

