"""What a project class is: an nn.Module, a DataLoader subclass, a Lightning module or callback,
a trainer framework's subclass (whose hooks receive device batches). Decided by its bases,
imported (by qualified name, with the project's answers for other modules' classes) or local.

A mixin of ValueAnalysis (analysis/values.py): it uses its ``qualname``, ``reaching_defs``,
``index`` and ``env``.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import dispatch
from torchsync_lint.analysis.index import param_index
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
        `Engine(_update)`, `Engine(Trainer.train_step)`, an `Engine` subclass whose `__init__`
        passes it to `super().__init__`, or a factory that builds one, here or in another
        module: `create_trainer(train_step)` of `def create_trainer(step): return
        Engine(step)`): the position of its batch parameter; None for any other function."""
        if self._batch_functions is None:
            found: dict[cst.FunctionDef, int] = {}
            for call in self.index.calls:
                for arg, batch in self._engine_arguments(call):
                    for target in self._functions_named(arg):
                        found[target] = batch
            self._batch_functions = found
        local = self._batch_functions.get(func)
        return local if local is not None else self.env.engine_batch_param(func)

    def batch_function_of(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this module an engine construction (`Engine(_update)`, a project
        factory of one) runs per batch."""
        found = {target for arg, _ in self._engine_arguments(call) for target in self._functions_named(arg)}
        return found.pop() if len(found) == 1 else None

    def engine_runner(self, call: cst.Call) -> tuple[int, int] | None:
        """(position of the function among ``call``'s arguments, position of its batch
        parameter) when ``call`` builds an engine that runs a function once per batch: the
        engine class itself, or `super().__init__(...)` in a subclass of one."""
        runners = trainer_frameworks.BATCH_FUNCTION_RUNNERS
        found = runners.get(self.qualname(call.func) or "")
        if found is not None:
            return found
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "__init__" and type(func.value) is cst.Call and type(func.value.func) is cst.Name and func.value.func.value == "super":
            info = self.index.class_of(call)
            if info is not None:
                for base in info.node.bases:
                    found = runners.get(self.qualname(base.value) or "")
                    if found is not None:
                        return found
        return None

    def engine_params(self, func: cst.FunctionDef) -> list[tuple[int, int]]:
        """(position, batch position) of each parameter ``func`` hands an engine that runs it
        once per batch (`def create_trainer(step): return Engine(step)`; an engine subclass's
        `def __init__(self, func, model): ... super().__init__(func)`), itself or through a
        function or a base class's `__init__` it hands the parameter to, sorted."""
        memo = self._engine_params_memo
        if func in memo:
            return memo[func]
        memo[func] = []  # (recursion guard: a function that hands itself on hands nothing)
        found = set()
        for node in self.index.tree.walk_subtree(func.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if type(node) is not cst.Call:
                continue
            for arg, batch in self._engine_arguments(node):
                defs = self.reaching_defs(arg) if type(arg) is cst.Name else []
                if defs and all(d.how == "param" and d.func is func for d in defs):
                    position = param_index(func, defs[0].param)
                    if position is not None:
                        found.add((position, batch))
        memo[func] = sorted(found)
        return memo[func]

    def _engine_arguments(self, call: cst.Call) -> list[tuple[cst.BaseExpression, int]]:
        """The expressions ``call`` hands an engine to run once per batch, each with the
        position of its batch parameter: the engine's own argument, what a function or an
        engine subclass of this module passes on to one, or another module's (its summary's
        "engines")."""
        runner = self.engine_runner(call)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if runner is not None:
            return [(positional[runner[0]], runner[1])] if runner[0] < len(positional) else []
        target = self._local_callee(call)
        if target is None:
            return list(self.env.engine_arguments(call))
        params = [*target.params.posonly_params, *target.params.params]
        out = []
        for position, batch in self.engine_params(target):
            arg = self.index.argument_for(call, target, params[position])
            if arg is not None and arg is not params[position].default:
                out.append((arg, batch))
        return out

    def _local_callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this module a call by name runs (`Sub(...)` runs `Sub.__init__`)."""
        if type(call.func) is not cst.Name:
            return None
        if self.index.local_class(call.func) is not None:
            return dispatch.lookup(self.index, self.index.classes[call.func.value], "__init__")
        target = self.index.resolve_function(call.func, call)
        return target if target is not None and self.index.class_of_method.get(target) is None else None

    def _functions_named(self, expr: cst.BaseExpression) -> list[cst.FunctionDef]:
        """The functions of this module ``expr`` names: a name bound by a `def`, or
        `Cls.method` of a class of this module (a static method handed on: `Engine(Trainer.train)`)."""
        if type(expr) is cst.Name:
            return [d.stmt for d in self.reaching_defs(expr) if isinstance(d.stmt, cst.FunctionDef)]
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and self.index.local_class(expr.value) is not None:
            method = dispatch.lookup(self.index, self.index.classes[expr.value.value], expr.attr.value)
            return [method] if method is not None else []
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
