"""What a device value is, shown by what the code does with it (part of ValueAnalysis,
values.py, which provides ``_eval``, ``reaching_defs`` and ``index``; evidence.py's
``with_evidence`` applies the answers to a binding's kind).

- Containers: a binding the code uses as a mapping or a list (`"mask" in batch` with a
  string, `batch["mask"]`, `for k in x: x[k]`, `outputs.items()`, `.get()`, `.keys()`,
  `.append()`, `model(**batch)`) is a Python container, not a tensor: a tensor has none of
  these (`Tensor.__contains__` takes a number or a tensor, and a tensor is indexed by
  numbers). Of a device value, it makes a container of device tensors (kinds.py: its
  membership, keys and truth value are host reads).
- Modules: a binding whose module methods the code calls (`ema.parameters()`,
  `.state_dict()`, `.eval()`, `.named_modules()`, also on `self.ema`, also after an
  `ema.to(device)` statement) is a module (or an object holding a module's state, such as an
  EMA of its parameters), not a tensor: its `.to("cpu")`/`.cpu()` moves parameters for a
  checkpoint, it is no tensor read on the host.
- Filled containers: a list or dict display (or `dict()`/`list()`) that device values are
  appended or stored into before a read, in the same function, holds device tensors.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import Def
from torchsync_lint.analysis.kinds import DEVICE_VALUES, Kind
from torchsync_lint.knowledge import torch as torch_knowledge

# Methods of Python mappings and lists that a tensor lacks: calling one shows a container.
_MAPPING_METHODS = frozenset({"keys", "items", "get", "setdefault", "update", "popitem"}) - torch_knowledge.TENSOR_METHODS
_SEQUENCE_METHODS = frozenset({"append", "extend", "insert"}) - torch_knowledge.TENSOR_METHODS
_MODULE_METHODS = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children", "buffers", "named_buffers",
     "state_dict", "load_state_dict", "eval", "train", "register_forward_hook", "register_forward_pre_hook", "register_buffer"}
) - torch_knowledge.TENSOR_METHODS
_USE_RANK = {"sequence": 0, "mapping": 1, "module": 2}  # a module with a dict's methods is a module
_TEXT = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_ADDING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault"})  # what puts a value into a container
_HOLDS_DEVICE = DEVICE_VALUES | {Kind.MOVED}


class ShapeEvidence:
    def container_use(self, d: Def) -> str | None:
        """"mapping" when the code uses what ``d`` binds as a mapping (`"k" in v`, `v["k"]`,
        `v.items()`, `f(**v)`), "sequence" as a list (`v.append(x)`), "module" as a module
        (`v.parameters()`, `v.state_dict()`), else None."""
        return self._reused(self._module_facts, "containers", self._find_container_defs).get(id(d))

    def _find_container_defs(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for receiver, use in self._container_uses():
            for d in self._receiver_defs(receiver):
                if _USE_RANK[use] > _USE_RANK.get(found.get(id(d)), -1):
                    found[id(d)] = use
        return found

    def _receiver_defs(self, receiver: cst.BaseExpression) -> list[Def]:
        """The bindings a used name (or `self.<attr>`, any store of the class) may hold."""
        if type(receiver) is cst.Name:
            defs, seen = self.reaching_defs(receiver), set()
            for d in defs:  # `ema.to("cpu")` as a statement rebinds `ema`: it is what was moved
                if d.how == "module-move" and id(d) not in seen:
                    seen.add(id(d))
                    defs += [m for m in self.reaching_defs(d.stmt.value.func.value) if m not in defs]
            return defs
        if type(receiver) is cst.Attribute and type(receiver.value) is cst.Name and receiver.value.value == "self":
            info = self.index.class_of(receiver)
            return info.self_attrs.get(receiver.attr.value, []) if info is not None else []
        return []

    def _container_uses(self):
        """(receiver, "mapping"|"sequence"|"module") for each read of a name (or of `self.x`)
        that only a container, or a module, allows."""
        index = self.index
        for cmp in index.nodes_of(cst.Comparison):
            if len(cmp.comparisons) == 1 and type(cmp.comparisons[0].operator) in (cst.In, cst.NotIn):
                if self._is_text(cmp.left):
                    yield cmp.comparisons[0].comparator, "mapping"  # `"mask" in batch`, `key in batch`
        for call in index.calls:
            func = call.func
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method in _MAPPING_METHODS:
                    yield func.value, "mapping"
                elif method in _SEQUENCE_METHODS:
                    yield func.value, "sequence"
                elif method in _MODULE_METHODS:
                    receiver = func.value
                    while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and receiver.func.attr.value in torch_knowledge.MODEL_METHODS_RETURNING_MODEL:
                        receiver = receiver.func.value  # `ema.cpu().state_dict()`: of `ema`
                    yield receiver, "module"
            for arg in call.args:
                if arg.star == "**" and type(arg.value) is cst.Name:
                    yield arg.value, "mapping"  # `model(**batch)`
        for sub in index.nodes_of(cst.Subscript):
            if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index) and self._iterated_key(sub):
                yield sub.value, "mapping"  # `for k in images: images[k]`: indexed by its own keys
            if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index) and isinstance(sub.slice[0].slice.value, _TEXT):
                yield sub.value, "mapping"  # `batch["mask"]`: a tensor is indexed by numbers

    def _is_text(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A string: a literal, or a name every binding of which is one or an item of a
        display of them (`for key in ("image", "mask"):`)."""
        if isinstance(expr, _TEXT):
            return True
        if type(expr) is not cst.Name or depth > 2:
            return False
        defs = self.reaching_defs(expr)
        return bool(defs) and all(
            (d.how == "assign" and d.value is not None and self._is_text(d.value, depth + 1))
            or (d.how == "for" and not d.path and type(d.value) in (cst.List, cst.Tuple) and d.value.elements and all(isinstance(el.value, _TEXT) for el in d.value.elements))
            for d in defs
        )

    def _iterated_key(self, sub: cst.Subscript) -> bool:
        """`x[k]` where `k` is an item of `for k in x`: iterating a tensor gives its rows,
        which index nothing; iterating a mapping gives the keys it is indexed by."""
        key, base = sub.slice[0].slice.value, sub.value
        if type(key) is not cst.Name or type(base) is not cst.Name:
            return False
        defs = self.reaching_defs(key)
        return bool(defs) and all(d.how == "for" and not d.path and type(d.value) is cst.Name and d.value.value == base.value for d in defs)

    def is_mapping(self, expr: cst.BaseExpression) -> bool:
        """A dict: a name every binding of which is a dict display, comprehension or
        `dict(...)` call, or that the code uses as a mapping."""
        if isinstance(expr, (cst.Dict, cst.DictComp)):
            return True
        if type(expr) is not cst.Name:
            return False
        defs = self.reaching_defs(expr)
        return bool(defs) and all(
            self.container_use(d) == "mapping" or (d.how == "assign" and (isinstance(d.value, (cst.Dict, cst.DictComp)) or _is_dict_call(d.value, self.index))) for d in defs
        )

    def _device_added_to(self, node: cst.Name) -> bool:
        """Was a device value appended to, or stored into, this list or dict before ``node``
        reads it, in the same function? (`loss_dict["d"] = d_loss`, `res.append(acc)`)"""
        frame = self.index.frame_of(node)
        seq = self.index.seq(node)
        for store, value in self._stores_into().get(node.value, ()):
            if self.index.seq(store) < seq and self.index.frame_of(store) is frame and self._eval(value) in _HOLDS_DEVICE:
                return True
        return False

    def _stores_into(self) -> dict[str, list[tuple[cst.CSTNode, cst.BaseExpression]]]:
        """name -> (statement or call, value) for each `name[k] = value` (first) and each
        `name.append(value)` / `extend` / `insert` / `update` / `setdefault` of the module,
        in source order: found once, not per read."""
        if self._stores is None and self._seed is not None:
            self._stores = self._seed._stores_into()  # noqa: SLF001
        if self._stores is None:
            by_key: dict[str, list] = {}
            for assign in self.index.nodes_of(cst.Assign):
                for t in assign.targets:
                    store = t.target
                    if type(store) is cst.Subscript and type(store.value) is cst.Name:
                        by_key.setdefault(store.value.value, []).append((assign, assign.value))
            for call in self.index.calls:
                func = call.func
                if type(func) is cst.Attribute and func.attr.value in _ADDING_METHODS and type(func.value) is cst.Name and call.args:
                    by_key.setdefault(func.value.value, []).append((call, call.args[-1].value))
            self._stores = by_key
        return self._stores

def _is_dict_call(value, index) -> bool:
    func = value.func if isinstance(value, cst.Call) else None
    return isinstance(func, cst.Name) and func.value == "dict" and not index.binds_locally("dict", func)


def empty_container_call(value, index) -> bool:
    """`dict()` / `list()` (of the builtins): an empty container to be filled."""
    func = value.func if type(value) is cst.Call else None
    return type(func) is cst.Name and func.value in ("dict", "list") and not value.args and not index.binds_locally(func.value, func)
