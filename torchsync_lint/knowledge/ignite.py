"""pytorch-ignite: engines that own the loop, the factories that build them, and the events
whose handlers run once per iteration.

Read from pytorch-ignite 0.5.5 (`ignite/engine/__init__.py`, `engine.py`, `events.py`):
- `engine.run(data, max_epochs=...)` iterates ``data`` and calls the process function once per
  batch; the loader's settings, its dataset's `__getitem__` and transforms run per step.
- `create_supervised_trainer(model, optimizer, loss_fn, device=None, non_blocking=False, ...)`
  and `create_supervised_evaluator(model, metrics=None, device=None, non_blocking=False, ...)`
  build an Engine whose step copies each batch with `convert_tensor(x, device, non_blocking)`:
  with a device given, every batch of the loader goes there (`device=None` moves nothing).
- `@engine.on(event)` / `engine.add_event_handler(event, handler)`: the handler runs whenever
  the event fires. `Events.ITERATION_*` and `Events.GET_BATCH_*` fire once per iteration;
  `Events.X(every=N)` every N-th time (gated); `Events.X(once=N)` and `Events.X(before=N)` a
  bounded number of times (not per step); `Events.X(event_filter=f)` whenever ``f`` says (not
  known: silent).
"""

from __future__ import annotations

# The Engine classes and the function each runs per batch: trainer_frameworks.BATCH_FUNCTION_RUNNERS.

# Factories of engines that move every batch to ``device`` themselves: qualname -> the position
# (among the call's arguments) and keyword of ``device`` and of ``non_blocking`` (default False).
ENGINE_FACTORIES: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {
    "ignite.engine.create_supervised_trainer": ((3, "device"), (4, "non_blocking")),
    "ignite.engine.create_supervised_evaluator": ((2, "device"), (3, "non_blocking")),
}

# `engine.run(data, ...)`: the method, and the position / keyword of the data it iterates.
RUN_METHOD = "run"
RUN_DATA = (0, "data")

# The Events enum, and the events that fire once per iteration of `run`.
EVENTS = frozenset({"ignite.engine.Events", "ignite.engine.events.Events"})
STEP_EVENTS = frozenset({"ITERATION_STARTED", "ITERATION_COMPLETED", "GET_BATCH_STARTED", "GET_BATCH_COMPLETED"})
# Filters of `Events.X(...)`: ``every`` gates a per-step event to every N-th step; these run a
# bounded number of times in the whole run, or whenever a user function says.
GATING_FILTERS = frozenset({"every"})
BOUNDED_FILTERS = frozenset({"once", "before", "event_filter"})

# Methods that register a handler: name -> (position of the event, position of the handler;
# None: the method is a decorator and the handler is the decorated function).
HANDLER_METHODS: dict[str, tuple[int, int | None]] = {
    "on": (0, None),
    "add_event_handler": (0, 1),
}
