"""What the loader tracker (analysis/loaders.py) answers about a loader's dataset: the calls
that construct it (through names, `self.x`, same-module helpers, `Subset`/`random_split`/
`ConcatDataset` wrappers), whether it already lives on the device or in memory, and the datasets
handed to a trainer framework that builds the loaders itself.

A mixin of LoaderTracker: it uses its ``analysis``, ``index`` and ``values``.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import dispatch
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import ClassInfo, literal_element
from torchsync_lint.analysis.framework_loaders import trainer_calls
from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.analysis.loader_info import LoaderInfo
from torchsync_lint.knowledge import trainer_frameworks

_MAX_DEPTH = 8


def calls_nothing(tree, func: cst.FunctionDef) -> bool:
    """Does ``func`` (a dataset's `__getitem__`) make no call at all: its items are values
    already in memory (TSL303's exception; the project summary records it for other modules)?"""
    return not any(type(n) is cst.Call for n in tree.walk_subtree(func))


def items_on_device(analysis, info: ClassInfo) -> bool | None:
    """Does the class's own `__getitem__` return only items of tensors its `__init__` leaves on
    the device (`self.data = self.data.to("cuda")` ... `return self.data[i], self.targets[i]`)?
    Then its loader's batches are device tensors: nothing to pin, copy or load in workers. None
    when the class has no `__getitem__` of its own."""
    getitem = info.methods.get("__getitem__")
    if getitem is None:
        return None
    returns = analysis.index.returns.get(getitem, [])
    if not returns or not calls_nothing(analysis.index.tree, getitem):
        return False
    return all(_device_items(analysis, info, r, 0) for r in returns)


def _device_items(analysis, info: ClassInfo, expr: cst.BaseExpression | None, depth: int) -> bool:
    """Is ``expr`` (what `__getitem__` returns) made only of items of device attributes: a
    `self.<attr>[...]`, a tuple, list or dict of such, or a name bound to one?"""
    if expr is None or depth > 4:
        return False
    if isinstance(expr, (cst.Tuple, cst.List)):
        return bool(expr.elements) and all(type(el) is cst.Element and _device_items(analysis, info, el.value, depth + 1) for el in expr.elements)
    if isinstance(expr, cst.Dict):
        return bool(expr.elements) and all(type(el) is cst.DictElement and _device_items(analysis, info, el.value, depth + 1) for el in expr.elements)
    if isinstance(expr, cst.Subscript):
        parts = dotted_parts(expr.value)
        return bool(parts) and len(parts) == 2 and parts[0] == "self" and _attr_on_device(analysis, info, parts[1])
    if isinstance(expr, cst.Name):
        defs = analysis.values.reaching_defs(expr)
        values = [d.value if d.how == "assign" else literal_element(d) if d.how == "unpack" else None for d in defs]
        return bool(values) and all(_device_items(analysis, info, v, depth + 1) for v in values)
    return False


def _attr_on_device(analysis, info: ClassInfo, attr: str) -> bool:
    """Is the last value `__init__` stores on `self.<attr>` a device tensor, with no other
    method storing one (`self.data = self.data.float().div(255)`, then `.to("cuda")`)?"""
    init = info.methods.get("__init__")
    stores = info.self_attrs.get(attr, [])
    if init is None or not stores or any(analysis.index.enclosing_function(d.stmt) is not init for d in stores):
        return False
    last = max(stores, key=lambda d: d.seq)
    value = last.value if last.how == "assign" else literal_element(last) if last.how == "unpack" else None
    return value is not None and analysis.values.kind(value) in (Kind.DEVICE, Kind.MOVED)


class DatasetQueries:
    def dataset_on_device(self, info: LoaderInfo) -> bool:
        """`DataLoader(TensorDataset(x.cuda(), ...))`, or a dataset class whose items are
        tensors it keeps on the device (items_on_device; of another module, through the
        project view), also through `Subset`/`ConcatDataset`/`random_split` wrappers: nothing
        to pin or load in workers, and its batches are already where they go."""
        calls = [c for c in self.dataset_calls(info) if not self._wrapped_datasets(c)]
        return bool(calls) and all(self._constructs_device_items(c) for c in calls)

    def _constructs_device_items(self, call: cst.Call) -> bool:
        if (self.analysis.qualname(call.func) or "") == "torch.utils.data.TensorDataset":
            return any(self.values.kind(a.value) in (Kind.DEVICE, Kind.MOVED) for a in call.args)  # tensors, moved
        cls = self.index.local_class(call.func)
        if cls is None:
            return self.analysis.env.dataset_class_on_device(call, self.values)  # a class of another module
        return bool(items_on_device(self.analysis, cls))

    def dataset_in_memory(self, info: LoaderInfo) -> bool:
        """A `TensorDataset`, or a dataset class (of this module, or, with a project view, of
        another) whose `__getitem__` (its own or a base's) calls nothing (`return {"prompt":
        self.prompt, "index": index}`, `return self.x[i], self.y[i]`): items are values already
        in memory, so worker processes add IPC, not speed."""
        call = self._dataset_call(info.dataset)
        if call is None:
            return False
        if (self.analysis.qualname(call.func) or "") == "torch.utils.data.TensorDataset":
            return True
        cls = self.index.local_class(call.func)
        if cls is None:
            return self.analysis.env.dataset_class_in_memory(call, self.values)  # a class of another module
        getitem = dispatch.lookup(self.index, cls, "__getitem__")
        return getitem is not None and calls_nothing(self.index.tree, getitem)

    def _dataset_call(self, expr: cst.BaseExpression | None, depth: int = 0) -> cst.Call | None:
        """The call that constructed the dataset (through names and `Subset`/`random_split` wrappers)."""
        if expr is None or depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            return expr
        if isinstance(expr, cst.Name):
            defs = [d for d in self.values.reaching_defs(expr) if d.how == "assign"]
            calls = {self._dataset_call(d.value, depth + 1) for d in defs}
            calls.discard(None)
            return calls.pop() if len(calls) == 1 else None
        if isinstance(expr, cst.Attribute):
            parts = dotted_parts(expr)
            if parts and len(parts) == 2 and parts[0] == "self":
                func = self.index.enclosing_function(expr)
                info = self.index.class_of_method.get(func) if func is not None else None
                if info is not None:
                    calls = {self._dataset_call(d.value, depth + 1) for d in info.self_attrs.get(parts[1], []) if d.how == "assign"}
                    calls.discard(None)
                    return calls.pop() if len(calls) == 1 else None
        return None

    def handed_datasets(self) -> list[cst.BaseExpression]:
        """Datasets handed to a trainer framework that builds the loaders itself and moves
        every batch to the device (`trainer.train(train_dataset=ds)` of pytorch-accelerated)."""
        out = []
        for call in self.index.calls:
            func = call.func
            consumes = trainer_frameworks.DATASET_CONSUMERS.get(func.attr.value) if isinstance(func, cst.Attribute) else None
            if not consumes or not self._is_framework_trainer(func.value):
                continue
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            for a in call.args:
                if a.keyword is not None and a.keyword.value in consumes:
                    out.append(a.value)
            out += [positional[i] for i in consumes.values() if i < len(positional)]
        for _call, _keywords, datasets in trainer_calls(self):  # `Trainer(train_dataset=ds)` of HF
            out += datasets
        return out

    def _is_framework_trainer(self, expr: cst.BaseExpression) -> bool:
        cls = self.index.local_class(expr.func) if isinstance(expr, cst.Call) else None
        if cls is not None:
            return self.values.is_framework_trainer(cls.node)  # `MyTrainer(...).train(...)`
        if isinstance(expr, cst.Name):
            cls = self.index._instance_class(self.values.reaching_defs(expr))  # noqa: SLF001 - `trainer = MyTrainer(...)`
            if cls is not None:
                return self.values.is_framework_trainer(cls.node)
        return self.values.names_framework_trainer(self.values.origin_qualname(expr) or "")

    def dataset_calls(self, info: LoaderInfo) -> list[cst.Call]:
        """The dataset constructor and any it wraps (`Subset(ds, idx)`, `ConcatDataset([...])`)."""
        return self.dataset_calls_of(info.dataset)

    def dataset_calls_of(self, dataset: cst.BaseExpression | None) -> list[cst.Call]:
        out: list[cst.Call] = []
        todo = [dataset]
        seen: set[int] = set()
        while todo and len(out) < 16:
            for call in self._dataset_call_candidates(todo.pop()):
                if id(call) in seen:
                    continue
                seen.add(id(call))
                out.append(call)
                todo += self._wrapped_datasets(call)
        return out

    def _dataset_call_candidates(self, expr: cst.BaseExpression | None, depth: int = 0) -> list[cst.Call]:
        """Every constructor call the dataset may come from (`if a: ds = A(...) else: ds = B(...)`),
        through same-module helpers that build it (`DataLoader(prepare(ds))`)."""
        if expr is None or depth > _MAX_DEPTH:
            return []
        if isinstance(expr, cst.Call):
            target = self.index.target_of(expr)
            if target is not None and target not in self.index.class_of_method:
                out: list[cst.Call] = []
                for r in self.index.returns.get(target, []):
                    out += self._dataset_call_candidates(r, depth + 1)
                return out or [expr]
            return [expr]
        if isinstance(expr, cst.IfExp):  # `CIFAR10(...) if rank == 0 else None`
            return self._dataset_call_candidates(expr.body, depth + 1) + self._dataset_call_candidates(expr.orelse, depth + 1)
        if isinstance(expr, cst.Name):
            out: list[cst.Call] = []
            for d in self.values.reaching_defs(expr):
                if d.how == "assign":
                    out += self._dataset_call_candidates(d.value, depth + 1)
                elif d.how == "unpack" and _is_split(self.analysis.qualname(d.value.func) if isinstance(d.value, cst.Call) else None):
                    out.append(d.value)  # `train, val = random_split(ds, [n, m])`: parts of `ds`
                elif d.how == "unpack" and len(d.path) == 1 and isinstance(d.value, cst.Call) and self.index.target_of(d.value) is not None:
                    for r in self.index.returns.get(self.index.target_of(d.value), []):  # `ds, n = build_dataset(cfg)`
                        if isinstance(r, (cst.Tuple, cst.List)) and d.path[0] < len(r.elements):
                            out += self._dataset_call_candidates(r.elements[d.path[0]].value, depth + 1)
            return out
        single = self._dataset_call(expr, depth)
        return [single] if single is not None else []

    def _wrapped_datasets(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The datasets a `Subset(ds, idx)` / `ConcatDataset([a, b])` wraps."""
        qn = self.analysis.qualname(call.func) or ""
        if _is_split(qn):
            return [call.args[0].value] if call.args and not call.args[0].star else []
        if qn not in ("torch.utils.data.Subset", "torch.utils.data.ConcatDataset"):
            return []
        todo: list[cst.BaseExpression] = []
        for a in call.args:
            if isinstance(a.value, (cst.List, cst.Tuple)):
                todo += [el.value for el in a.value.elements]
            else:
                todo.append(a.value)
        return todo


def _is_split(qualname: str | None) -> bool:
    """`torch.utils.data.random_split(ds, lengths)`: subsets of ``ds``."""
    return qualname in ("torch.utils.data.random_split", "torch.utils.data.dataset.random_split")
