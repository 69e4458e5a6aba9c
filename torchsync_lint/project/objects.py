"""The project view's object model: what an attribute of a value holds, and which function a
call of an object runs.

An instance of a project class is an abstract object made at one construction site: it carries
the arguments that site passed, so `self.loader = loader` in its `__init__` reads as what *that*
call passed (`Trainer(model, data.train, ...)`), not as the join over every construction of the
class. An attribute assigned elsewhere in the class (`self.val = val` in `update`) is what the
calls of that method pass, over the project. Bases are followed for attributes and methods. A
mixin of ProjectView (view.py), which provides ``summaries``, ``resolve``, ``resolve_name``,
``class_of``, ``function``, ``_member`` and ``param_value``.
"""

from __future__ import annotations

from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.knowledge import torch as tk
from torchsync_lint.knowledge.python import DICT_METHODS
from torchsync_lint.project import absval
from torchsync_lint.project.values import call_bindings

_MAX_BASES = 6
# Methods of a module of unknown class that no project method name can stand for: torch's own.
_GENERIC_METHODS = tk.MODULE_METHODS | tk.TENSOR_METHODS | {"__call__", "forward", "__init__"}


class ObjectAnswers:
    def attribute_value(self, base: dict, name: str, depth: int = 0) -> dict:
        """`base.name` for a resolved ``base``: a field of an instance, one alternative at a
        time for a value that may be several; unknown for anything else."""
        kind = base.get("k")
        if kind == "instance":
            path, cls = base["cls"].split(":", 1)
            found = self.class_attr(path, cls, name, instance=base)
            return found if found is not None else absval.UNKNOWN
        if kind == "any":
            return absval.join_abs([self.attribute_value(alt, name, depth + 1) for alt in base["of"]])
        if kind == "class":  # `Engine.train` of a class handed around: its function
            path, cls = base["ref"].split(":", 1)
            member = self._member(path, f"{cls}.{name}", 0)
            return {"k": "func", "ref": f"{member[1]}:{member[2]}"} if member is not None and member[0] == "function" else absval.UNKNOWN
        if name in tk.SAME_VALUE_ATTRIBUTES and absval.kind_of(base) in (Kind.DEVICE, Kind.HOST_TENSOR):
            return {"k": absval.kind_of(base).value}  # `p.grad`, `t.data` of a tensor: where the tensor is
        if kind == "dict" and name not in DICT_METHODS:
            return base["items"].get(name, absval.UNKNOWN)  # `nets.generator` of a `Munch(generator=...)`
        return absval.UNKNOWN

    def class_attr(self, path: str, cls: str, attr: str, depth: int = 0, instance: dict | None = None, bind: dict | None = None) -> dict | None:
        """What `self.<attr>` holds for an instance of ``cls`` (of ``path``), through its bases;
        with ``instance``, the parameters of the `__init__` its class runs (its own or a
        base's) are that instance's arguments; ``bind`` answers for the parameters of the
        methods called on one object (instances.py)."""
        if instance is not None:
            bind = {**(self._init_bindings(path, cls, instance) or {}), **(bind or {})}
        record = self.summaries[path]["classes"].get(cls)
        if record is None or depth > _MAX_BASES:
            return None
        stored = record["attrs"].get(attr)  # (deferred: computed on this first read)
        if stored is not None:
            return self.resolve(stored, path, bind=bind)
        for base in record["bases"]:
            found = self.class_of(base, path)
            if found is not None:
                value = self.class_attr(*found, attr, depth + 1, bind=bind)
                if value is not None:
                    return value
        return None

    def method_refs(self, path: str, cls: str) -> dict[str, str]:
        """Method name -> "path:Qual" of the function an instance of ``cls`` runs for it."""
        out: dict[str, str] = {}
        for p, c, record in reversed(self.lineage(path, cls)):  # a subclass's method wins
            out.update({m: f"{p}:{c}.{m}" for m in record["methods"] if f"{c}.{m}" in self.summaries[p]["functions"]})
        return out

    def _init_bindings(self, path: str, cls: str, instance: dict) -> dict | None:
        """What the construction that made ``instance`` passed for the parameters of the
        `__init__` its class runs, its own or one it inherits (None when the class has none)."""
        member = self._member(path, f"{cls}.__init__", 0)
        record = self.function(member[1], member[2]) if member is not None and member[0] == "function" else None
        if record is None:
            return None
        return call_bindings(f"{member[1]}:{member[2]}", record, 1, list(instance.get("args", ())), instance.get("kwargs", {}))

    def items_of(self, value: dict) -> dict:
        """What iterating a resolved value gives: for an instance of a project class, what its
        `__iter__` yields (a prefetcher wrapping a loader); else the item form."""
        kind = value.get("k")
        if kind == "any":
            return absval.join_abs([self.items_of(alt) for alt in value["of"]])
        if kind == "tuple" and value["items"]:
            return absval.join_abs(value["items"])  # a list of modules or values: one of them
        if kind == "instance":
            path, cls = value["cls"].split(":", 1)
            member = self._member(path, f"{cls}.__iter__", 0)
            record = self.function(member[1], member[2]) if member is not None and member[0] == "function" else None
            if record is not None and record.get("yielded") is not None:
                return self.resolve(record["yielded"], member[1], bind=self._init_bindings(path, cls, value))
            return absval.UNKNOWN
        return {"k": "item", "of": value}

    def methods_of_value(self, value: dict, method: str, from_path: str) -> list[tuple[str, int]]:
        """("path:Qual", parameters the call fills) of what calling ``method`` on ``value`` (a
        resolved value) may run: a project class's method (through its bases), `__call__` or
        `forward` when the object itself is called, the function itself when a function is,
        a class's `__init__` when a class is; one per alternative of a value that may be
        several (a loss chosen by the config)."""
        kind = value.get("k")
        if kind == "any":
            found: list[tuple[str, int]] = []
            for alt in value["of"]:
                found += [t for t in self.methods_of_value(alt, method, from_path) if t not in found]
            return found
        if kind == "func":
            return [(value["ref"], 0)] if method == "__call__" else []
        if kind == "dict":  # `nets.generator(x)` of a `Munch(generator=G(...))`: the item called
            item = value["items"].get(method) if method not in DICT_METHODS else None
            return self.methods_of_value(self.resolve(item, from_path), "__call__", from_path) if item else []
        if kind == "class":
            path, cls = value["ref"].split(":", 1)
            if method != "__call__":
                return []
            init = self._member(path, f"{cls}.__init__", 0)
            return [(f"{init[1]}:{init[2]}", 1)] if init is not None and init[0] == "function" else []
        if kind == "instance":
            path, cls = value["cls"].split(":", 1)
        elif kind == "object":
            found_name = self.resolve_name(value["origin"], from_path)
            if found_name is None or found_name[0] != "class":
                return []
            path, cls = found_name[1], found_name[2]
        elif kind in ("moved", "model", "device") and method not in _GENERIC_METHODS:
            return self._sole_module_method(method)
        else:
            return []
        for name in (method, "forward") if method == "__call__" else (method,):
            member = self._member(path, f"{cls}.{name}", 0)
            if member is not None and member[0] == "function":
                return [(f"{member[1]}:{member[2]}", 1)]
        return []

    def _sole_module_method(self, method: str) -> list[tuple[str, int]]:
        """A module of unknown class (unpickled from a checkpoint, built by a library) whose
        call names a method only one project module class defines (`model.detect_objects(...)`):
        that method, the only code of the project it can run. Names a library module or tensor
        also has (`forward`, `to`, `eval`...) never resolve this way, nor names several
        classes define."""
        if self._methods_by_name is None:
            table: dict[str, list[str]] = {}
            for path in sorted(self.summaries):
                for cls, record in sorted(self.summaries[path]["classes"].items()):
                    if self.class_flag(path, cls, "module"):
                        for name in record["methods"]:
                            table.setdefault(name, []).append(f"{path}:{cls}.{name}")
            self._methods_by_name = table
        found = self._methods_by_name.get(method, [])
        return [(found[0], 1)] if len(found) == 1 else []

    def stored_callees(self, spec: str) -> list[tuple[str, int]]:
        """`<path>:<Class>.<attr>[.<method>]`: the functions run by calling what the class
        stores on `self.<attr>` (or its ``method``)."""
        path, _, dotted = spec.partition(":")  # (the path has dots of its own: `pkg/train.py`)
        cls, _, rest = dotted.partition(".")
        attr, _, method = rest.partition(".")
        if path not in self.summaries or cls not in self.summaries[path]["classes"]:
            return []
        value = self.class_attr(path, cls, attr)
        return self.methods_of_value(value, method or "__call__", path) if value is not None else []

    def members_of_module(self, path: str) -> dict:
        """What `getattr(module, name)` may be: any top-level class or function of ``path``."""
        summary = self.summaries.get(path)
        if summary is None:
            return absval.UNKNOWN
        alternatives = [{"k": "class", "ref": f"{path}:{c}"} for c in sorted(summary["classes"])]
        alternatives += [{"k": "func", "ref": f"{path}:{f}"} for f in sorted(summary["functions"]) if "." not in f and not f.startswith("_")]
        for name, dotted in sorted(summary["aliases"].items()):  # `from .unet import UNet` in a package's __init__
            found = self.resolve_name(dotted, path) if not name.startswith("_") else None
            if found is not None and found[0] in ("class", "function"):
                value = {"k": "class" if found[0] == "class" else "func", "ref": f"{found[1]}:{found[2]}"}
                if value not in alternatives:
                    alternatives.append(value)
        return absval.join_abs(alternatives) if alternatives else absval.UNKNOWN

    # -- subclasses -------------------------------------------------------------------------
    def overrides(self, dispatch: str | None) -> list[str]:
        """"path:Qual" of every method overriding ``dispatch`` ("<ref of a class>.<method>")
        in a project subclass of that class, at any depth, in a stable order."""
        if not dispatch:
            return []
        cls_ref, _, method = dispatch.rpartition(".")
        found = []
        for sub in self.subclasses(cls_ref):
            path, cls = sub.split(":", 1)
            if f"{cls}.{method}" in self.summaries[path]["functions"]:
                found.append(f"{sub}.{method}")
        return found

    def subclasses(self, cls_ref: str) -> list[str]:
        """Every project class deriving from ``cls_ref`` ("path:Class"), transitively."""
        if self._children is None:
            children: dict[str, list[str]] = {}
            for path in sorted(self.summaries):
                for cls, record in sorted(self.summaries[path]["classes"].items()):
                    for base in record["bases"]:
                        parent = self.class_of(base, path)
                        if parent is not None:
                            children.setdefault(f"{parent[0]}:{parent[1]}", []).append(f"{path}:{cls}")
            self._children = children
        out, todo = [], list(self._children.get(cls_ref, ()))
        while todo and len(out) < 200:
            sub = todo.pop(0)
            if sub not in out:
                out.append(sub)
                todo += self._children.get(sub, ())
        return out
