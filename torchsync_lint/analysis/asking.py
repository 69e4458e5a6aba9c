"""The environment a module's value analysis asks the rest of the project through: every
question counts, so that an answer computed without one is known to hold whatever the project
says (analysis/values.py ``_solve`` marks such answers clean, and the same module's analysis
with the project's view reuses them)."""

from __future__ import annotations

from torchsync_lint.analysis.env import Env
from torchsync_lint.knowledge.libraries import LIBRARY_ROOTS

# Questions whose first argument is an imported name (a dotted qualname), not a local one.
_QUESTIONS_ABOUT_NAMES = frozenset(
    {"symbol_kind", "call_kind", "call_element", "is_step_like", "is_module_class", "is_lightning_class", "derives_from", "is_loader_class", "loader_class_settings", "metric_base"}
)


class AskingEnv:
    """An environment whose every question counts on ``asked`` (a one-item list shared by
    an analysis and its per-instance contexts)."""

    def __init__(self, env: Env, asked: list[int]) -> None:
        self._env = env.__dict__.get("_env", env)  # never wrapped twice
        self._asked = asked

    def __getattr__(self, name: str):
        found = getattr(self._env, name)
        if not callable(found):
            return found
        asked = self._asked

        about_names = name in _QUESTIONS_ABOUT_NAMES

        def asking(*args, **kwargs):
            if not (about_names and args and isinstance(args[0], str) and args[0].split(".", 1)[0] in LIBRARY_ROOTS):
                asked[0] += 1  # (a library's name is never the project's: no answer to wait for)
            return found(*args, **kwargs)

        self.__dict__[name] = asking  # made once per question: the next lookup finds it here
        return asking
