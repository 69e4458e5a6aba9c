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
from torchsync_lint.analysis.framework_loaders import trainer_calls
from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.analysis.loader_info import LoaderInfo
from torchsync_lint.knowledge import trainer_frameworks

_MAX_DEPTH = 8


def calls_nothing(tree, func: cst.FunctionDef) -> bool:
    """Does ``func`` (a dataset's `__getitem__`) make no call at all: its items are values
    already in memory (TSL303's exception; the project summary records it for other modules)?"""
    return not any(type(n) is cst.Call for n in tree.walk_subtree(func))


class DatasetQueries:
    def dataset_on_device(self, info: LoaderInfo) -> bool:
        """`DataLoader(TensorDataset(x.cuda(), ...))`: nothing to pin or load in workers."""
        call = self._dataset_call(info.dataset)
        if call is None or (self.analysis.qualname(call.func) or "") != "torch.utils.data.TensorDataset":
            return False
        return any(self.values.kind(a.value) in (Kind.DEVICE, Kind.MOVED) for a in call.args)  # tensors, moved

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
