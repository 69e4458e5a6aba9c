"""What a project class is: an nn.Module, a DataLoader subclass, a Lightning module or callback,
a trainer framework's subclass (whose hooks receive device batches). Decided by its bases,
imported (by qualified name, with the project's answers for other modules' classes) or local.

A mixin of ValueAnalysis (analysis/values.py): it uses its ``qualname``, ``reaching_defs``,
``index`` and ``env``.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.knowledge import lightning, trainer_frameworks
from torchsync_lint.knowledge import loaders as loader_knowledge

LIGHTNING_MODULES = lightning.LIGHTNING_MODULES


class ClassQueries:
    def is_module_class(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, lambda qn: qn.startswith("torch.nn.") or qn in LIGHTNING_MODULES or self.env.is_module_class(qn))

    def is_loader_class(self, cls: cst.ClassDef) -> bool:
        """A DataLoader subclass (`class AudioDataLoader(DataLoader)`): it loads like one."""
        return self._derives_from(cls, lambda qn: qn in loader_knowledge.LOADER_CLASSES or self.env.is_loader_class(qn))

    def loader_call_settings(self, call: cst.Call) -> frozenset[str] | None:
        """For a call that builds a DataLoader (torch's, a library's, or a project subclass):
        the DataLoader keywords its class sets itself (`super().__init__(..., pin_memory=True)`),
        which the call cannot leave unset; None when ``call`` builds no DataLoader."""
        qn = self.qualname(call.func) or ""
        if qn in loader_knowledge.LOADER_CLASSES:
            return frozenset()
        info = self.index.local_class(call.func)
        if info is not None:
            return self.loader_keywords_set(info) if self.is_loader_class(info.node) else None
        if qn:
            return self.env.loader_class_settings(qn)
        return None

    def loader_keywords_set(self, info) -> frozenset[str]:
        """Keywords a DataLoader subclass passes to its base's `__init__` itself; `*` when it
        passes positional arguments beyond the dataset, whose meaning depends on its own
        signature."""
        found: set[str] = set()
        for method in info.methods.values():
            for call in self.index.calls_by_owner.get(method, ()):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
                    found.update(a.keyword.value for a in call.args if a.keyword is not None)
                    plain = [a for a in call.args if a.keyword is None and not a.star]
                    if len(plain) > (1 if isinstance(func.value, cst.Call) else 2):
                        found.add("*")  # `super().__init__(dataset, 64, True, None, None, 4)`
        return frozenset(found)

    def framework_hook(self, func: cst.FunctionDef) -> tuple[int, ...] | None:
        """For a method a trainer framework's base class calls every batch (a subclass's
        `calculate_train_batch_loss`, a callback's `on_train_step_end`): the positions of its
        device parameters; None for any other function."""
        info = self.index.class_of_method.get(func)
        if info is None:
            return None
        for bases, hooks in trainer_frameworks.HOOKS:
            if func.name.value in hooks and self._derives_from(info.node, lambda qn, bases=bases: qn in bases or self.env.derives_from(qn, bases)):
                return hooks[func.name.value]
        return None

    def batch_function(self, func: cst.FunctionDef) -> int | None:
        """For a function this module hands an engine that runs it once per batch (ignite's
        `Engine(_update)`, or a project factory that builds one: `create_trainer(train_step)` of
        `def create_trainer(step): return Engine(step)`): the position of its batch parameter;
        None for any other function."""
        if self._batch_functions is None:
            found: dict[cst.FunctionDef, int] = {}
            for call in self.index.calls:
                for arg, batch in self._engine_arguments(call):
                    for d in self.reaching_defs(arg):
                        if isinstance(d.stmt, cst.FunctionDef):
                            found[d.stmt] = batch
            self._batch_functions = found
        return self._batch_functions.get(func)

    def batch_function_of(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this module an engine construction (`Engine(_update)`, a project
        factory of one) runs per batch."""
        found = {d.stmt for arg, _ in self._engine_arguments(call) for d in self.reaching_defs(arg) if isinstance(d.stmt, cst.FunctionDef)}
        return found.pop() if len(found) == 1 else None

    def _engine_arguments(self, call: cst.Call) -> list[tuple[cst.Name, int]]:
        """The names ``call`` hands an engine to run once per batch, each with the position of
        its batch parameter: the engine's own argument, or what another module's function
        passes on to one (its summary's "engines")."""
        runner = trainer_frameworks.BATCH_FUNCTION_RUNNERS.get(self.qualname(call.func) or "")
        if runner is None:
            return [(arg, batch) for arg, batch in self.env.engine_arguments(call) if isinstance(arg, cst.Name)]
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if runner[0] < len(positional) and isinstance(positional[runner[0]], cst.Name):
            return [(positional[runner[0]], runner[1])]
        return []

    def is_framework_trainer(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, self.names_framework_trainer)

    def names_framework_trainer(self, qn: str) -> bool:
        """A trainer class of a framework that owns the loop (knowledge/trainer_frameworks.py),
        or a project class derived from one."""
        bases = trainer_frameworks.TRAINER_BASES
        return qn in bases or self.env.derives_from(qn, bases)

    def is_lightning_callback(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, lambda qn: qn in lightning.CALLBACK_BASES)

    def is_lightning_class(self, cls: cst.ClassDef) -> bool:
        return self._derives_from(cls, lambda qn: qn in LIGHTNING_MODULES or self.env.is_lightning_class(qn))

    def _derives_from(self, cls: cst.ClassDef, is_base, depth: int = 0) -> bool:
        """Does ``cls`` have an imported base (by qualified name) that ``is_base`` accepts,
        directly or through local base classes (at most 5 deep)?"""
        for base in cls.bases:
            if is_base(self.qualname(base.value) or ""):
                return True
            if isinstance(base.value, cst.Name) and depth < 5:
                local = self.index.classes.get(base.value.value)
                if local is not None and self._derives_from(local.node, is_base, depth + 1):
                    return True
        return False
