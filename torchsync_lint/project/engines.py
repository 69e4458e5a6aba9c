"""The functions a project's ignite engines run once per batch, across modules: an `Engine`
subclass whose `__init__(self, func, ...)` hands `func` to `super().__init__` (its summary's
"engines"), constructed anywhere in the component with a function value, however the value
gets there: `MLEEngine(MLEEngine.train, ...)`, or a class handed around and called with its own
method (`SingleTrainer(MLEEngine, cfg)` storing it, then `self.engine_class(self.engine_class
.train, ...)`: the view resolves the stored class and its attribute to the function).

A mixin of ProjectView: it uses its ``summaries``, ``library_bases``, ``function``,
``param_value`` and ``resolve``.
"""

from __future__ import annotations

from torchsync_lint.knowledge import trainer_frameworks


class EngineAnswers:
    _engine_functions: dict[str, int] | None = None

    def engine_batch_param(self, ref: str) -> int | None:
        """The position of ``ref``'s batch parameter when a project engine class is constructed
        with it as its process function somewhere in the component; None otherwise."""
        if self._engine_functions is None:
            self._engine_functions = self._find_engine_functions()
        return self._engine_functions.get(ref)

    def _find_engine_functions(self) -> dict[str, int]:
        runners = trainer_frameworks.BATCH_FUNCTION_RUNNERS
        found: dict[str, int] = {}
        for path in sorted(self.summaries):
            for cls in sorted(self.summaries[path]["classes"]):
                if not set(self.library_bases(path, cls)) & runners.keys():
                    continue  # (only engine subclasses: their `__init__`'s "engines" field is read)
                init = f"{cls}.__init__"
                record = self.function(path, init)
                if record is None:
                    continue
                for position, batch in record.get("engines") or ():
                    passed = self.param_value(f"{path}:{init}", position)
                    for ref in _function_refs(passed):
                        found.setdefault(ref, batch)
        return found


def _function_refs(value: dict | None) -> list[str]:
    if not value:
        return []
    if value.get("k") == "func":
        return [value["ref"]]
    if value.get("k") == "any":
        return [ref for alt in value["of"] for ref in _function_refs(alt)]
    return []
