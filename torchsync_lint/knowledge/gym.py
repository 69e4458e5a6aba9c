"""gym / gymnasium environments: `env.step(action)` and `env.reset()` return numpy arrays and
Python numbers (host values), one tuple per call; vector environments the same, batched."""

from __future__ import annotations

ENV_FACTORIES = ("gym.make", "gymnasium.make", "gym.vector.", "gymnasium.vector.", "envpool.make")
METHODS_RETURNING_HOST = frozenset({"step", "reset"})
# An environment step unpacks into (obs, reward, done, info) or (obs, reward, terminated,
# truncated, info): a `.step(...)` result unpacked into this many names is one, whatever the
# environment object is (the gym API's shape, not a name).
ENV_STEP_ARITIES = frozenset({4, 5})
