"""The functions a project's ignite engines run once per batch, across modules: an `Engine`
subclass whose `__init__(self, func, ...)` hands `func` to `super().__init__` (its summary's
"engines"), constructed anywhere in the component with a function value, however the value
gets there: `MLEEngine(MLEEngine.train, ...)`, or a class handed around and called with its own
method (`SingleTrainer(MLEEngine, cfg)` storing it, then `self.engine_class(self.engine_class
.train, ...)`: the view resolves the stored class and its attribute to the function).

A mixin of ProjectView: it uses its ``summaries``, ``library_bases``, ``function``,
``callers`` and ``resolve``. The engine a process function is run by is its first parameter's
value when nothing else calls it (ValueAnswers.param_value asks engine_instance).
"""

from __future__ import annotations

from torchsync_lint.knowledge import trainer_frameworks
from torchsync_lint.project import absval
from torchsync_lint.project.values import passed_slot


class EngineAnswers:
    _engine_functions: dict[str, int] | None = None
    _engine_instances: dict[str, list[dict]] | None = None

    def engine_batch_param(self, ref: str) -> int | None:
        """The position of ``ref``'s batch parameter when a project engine class is constructed
        with it as its process function somewhere in the component; None otherwise."""
        self._find_engines()
        return self._engine_functions.get(ref)

    def engine_instance(self, ref: str) -> dict | None:
        """The engine objects that run ``ref`` (what ignite passes as its first parameter,
        `engine`): instances of the class whose method it is, made with each construction's
        arguments (`engine.model` is then the model the trainer handed over)."""
        self._find_engines()
        found = self._engine_instances.get(ref)
        return absval.join_abs(found) if found else None

    def _find_engines(self) -> None:
        if self._engine_functions is not None:
            return
        self._engine_functions, self._engine_instances = {}, {}  # (while computing: no answer yet)
        runners = trainer_frameworks.BATCH_FUNCTION_RUNNERS
        functions: dict[str, int] = {}
        instances: dict[str, list[dict]] = {}
        for path in sorted(self.summaries):
            for cls in sorted(self.summaries[path]["classes"]):
                if not set(self.library_bases(path, cls)) & runners.keys():
                    continue  # (only engine subclasses: their `__init__`'s "engines" field is read)
                init = f"{cls}.__init__"
                record = self.function(path, init)
                if record is None:
                    continue
                for position, batch in record.get("engines") or ():
                    name = record["params"][position] if position < len(record["params"]) else None
                    for caller_path, call, shift in self.callers(f"{path}:{init}"):
                        slot = passed_slot(call, position, name, shift) if not call["star"] else None
                        if slot is None:
                            continue
                        refs = _function_refs(self.resolve(slot[1], caller_path))
                        if not refs:
                            continue  # (no process function handed over: its arguments are not read)
                        args = [self.resolve(v, caller_path) for v in call["args"]]
                        kwargs = {k: self.resolve(v, caller_path) for k, v in call["kwargs"].items()}
                        for ref in refs:
                            functions.setdefault(ref, batch)
                            owner = ref.rpartition(".")[0]  # "path:Class" of `Class.method`
                            instance = {"k": "instance", "cls": owner, "module": False, "args": args, "kwargs": kwargs}
                            if batch == 1 and "." in ref.partition(":")[2] and instance not in instances.setdefault(ref, []):
                                instances[ref].append(instance)
        self._engine_functions, self._engine_instances = functions, instances


def _function_refs(value: dict | None) -> list[str]:
    if not value:
        return []
    if value.get("k") == "func":
        return [value["ref"]]
    if value.get("k") == "any":
        return [ref for alt in value["of"] for ref in _function_refs(alt)]
    return []
