"""Models a library trainer runs every step: a model handed to HF `Trainer(model=...)` (or to a
project subclass of it) has its `forward` called once per batch by the Trainer's
`training_step`, a loop no project line holds (knowledge/transformers.py). The project view
answers, for a class's `forward`, the construction of the trainer that runs it.

A mixin of ProjectView: it uses its ``summaries``, ``resolve_name``, ``library_bases`` and
``resolve``.
"""

from __future__ import annotations

from torchsync_lint.knowledge import transformers

_CALLEE_FORMS = ("^", "~", "@", "%", ":", "!", "*")  # (project/callees.py: not a dotted import name)


class TrainerModels:
    _trainer_models: dict | None = None

    def trainer_run_site(self, ref: str):
        """(path, record with a "line") of a trainer construction that runs the `forward` ``ref``
        ("<file>:<Class>.forward") every step; None when none does."""
        cls, _, method = ref.rpartition(".")
        if method != "forward":
            return None
        if self._trainer_models is None:
            self._trainer_models = self._find_trainer_models()
        return self._trainer_models.get(cls)

    def _find_trainer_models(self) -> dict:
        found: dict = {}
        for path in sorted(self.summaries):
            summary = self.summaries[path]
            for entry in summary.get("trainer_models", ()):  # `transformers.Trainer(model=...)`
                for cls in self._model_classes(entry["model"], path):
                    found.setdefault(cls, (path, entry))
            for call in summary["calls"]:  # `CLTrainer(model=...)` of a project subclass
                callee = call["callee"]
                if callee.startswith(_CALLEE_FORMS):
                    continue
                target = self.resolve_name(callee, path)
                if target is None or target[0] != "class" or not set(self.library_bases(target[1], target[2])) & transformers.TRAINERS:
                    continue
                model = call["kwargs"]["model"] if "model" in call["kwargs"] else call["args"][0] if len(call["args"]) else None
                for cls in self._model_classes(model, path) if model is not None else ():
                    found.setdefault(cls, (path, call))
        return found

    def _model_classes(self, value: dict, path: str, depth: int = 0) -> list[str]:
        """The project classes (refs) a model value may be an instance of: `Net(...)`,
        `Net.from_pretrained(...)`, either of several (`model = A(...) if x else B(...)`)."""
        if depth > 4 or not isinstance(value, dict):
            return []
        k = value.get("k")
        if k == "any":
            return [c for v in value["of"] for c in self._model_classes(v, path, depth + 1)]
        if k == "instance":
            return [value["cls"]]
        if k == "to":
            return self._model_classes(value["of"], path, depth + 1)
        if k == "call" and not value["fn"].startswith(_CALLEE_FORMS):
            owner, _, method = value["fn"].rpartition(".")
            if method in transformers.MODEL_FACTORY_METHODS:  # `BertForCL.from_pretrained(...)` of a project class
                target = self.resolve_name(owner, path)
                return [f"{target[1]}:{target[2]}"] if target is not None and target[0] == "class" else []
        if k in ("call", "sym", "param", "attr", "vcall"):
            resolved = self.resolve(value, path)
            if resolved.get("k") in ("instance", "any", "to") and resolved != value:
                return self._model_classes(resolved, path, depth + 1)
        return []
