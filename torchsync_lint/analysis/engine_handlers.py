"""Functions an ignite engine runs once per iteration: the handlers registered for a per-step
event (knowledge/ignite.py) with `@engine.on(Events.ITERATION_COMPLETED)` or
`engine.add_event_handler(Events.ITERATION_COMPLETED, fn)`.

The event decides, not the engine's name: `Events` resolves to ignite's enum by import, so a
handler registered on an engine that is a parameter (`def attach(trainer): @trainer.on(...)`)
counts too. `Events.X(every=N)` gates the handler (it runs every N-th step); `once=`,
`before=` and `event_filter=` leave it bounded or decided by the user's function: not per step.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.knowledge import ignite

# What an event expression means: it fires every step (no gate), every N-th step (the gate is
# the `Events.X(every=N)` call), or not per step.
_NOT_PER_STEP = object()


def step_handlers(values, index) -> dict[cst.FunctionDef, cst.BaseExpression | None]:
    """Each function of the module that ignite runs per iteration -> its gate (the
    `Events.X(every=N)` call) or None when it runs every iteration."""
    found: dict[cst.FunctionDef, cst.BaseExpression | None] = {}

    def add(func: cst.FunctionDef | None, event: cst.BaseExpression) -> None:
        if func is None:
            return
        gate = _event_gate(values, event)
        if gate is _NOT_PER_STEP:
            return
        if func in found and found[func] is None:
            return  # already ungated by another registration
        found[func] = gate

    for func in index.returns:
        for dec in func.decorators:
            call = dec.decorator
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ignite.HANDLER_METHODS:
                event = _positional(call, ignite.HANDLER_METHODS[call.func.attr.value][0], "event_name")
                if event is not None and ignite.HANDLER_METHODS[call.func.attr.value][1] is None:
                    add(func, event)
    for call in index.calls:
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ignite.HANDLER_METHODS:
            continue
        event_at, handler_at = ignite.HANDLER_METHODS[func.attr.value]
        if handler_at is None:
            continue
        event, handler = _positional(call, event_at, "event_name"), _positional(call, handler_at, "handler")
        if event is not None and handler is not None:
            add(_handler_function(index, handler, call), event)
    return found


def _positional(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    plain = [a.value for a in call.args if a.keyword is None and not a.star]
    return plain[position] if position < len(plain) else None


def _handler_function(index, handler: cst.BaseExpression, at: cst.CSTNode) -> cst.FunctionDef | None:
    """The function of this module a handler argument names (`log_step`, `self._log_step`)."""
    parts = dotted_parts(handler)
    if isinstance(handler, cst.Name) or (parts and len(parts) == 2 and parts[0] == "self"):
        return index.resolve_function(handler, at)
    return None


def _event_gate(values, event: cst.BaseExpression, depth: int = 0):
    """None (every step), the gating `Events.X(every=N)` call, or _NOT_PER_STEP."""
    if depth > 4:
        return _NOT_PER_STEP
    if isinstance(event, cst.BinaryOperation) and isinstance(event.operator, cst.BitOr):
        # `Events.ITERATION_COMPLETED | Events.COMPLETED`: whenever any of them fires
        sides = [_event_gate(values, event.left, depth + 1), _event_gate(values, event.right, depth + 1)]
        per_step = [s for s in sides if s is not _NOT_PER_STEP]
        if not per_step:
            return _NOT_PER_STEP
        return None if any(s is None for s in per_step) else per_step[0]
    if isinstance(event, cst.Call):
        if not _is_step_event(values, event.func):
            return _NOT_PER_STEP
        keywords = {a.keyword.value for a in event.args if a.keyword is not None}
        if keywords & ignite.BOUNDED_FILTERS or any(a.keyword is None for a in event.args):
            return _NOT_PER_STEP  # a bounded number of times, or as a user filter says
        return event if keywords & ignite.GATING_FILTERS else None
    if isinstance(event, cst.Name):
        defs = values.reaching_defs(event)
        if len(defs) == 1 and defs[0].how == "assign" and defs[0].value is not None:
            return _event_gate(values, defs[0].value, depth + 1)
        return _NOT_PER_STEP
    return None if _is_step_event(values, event) else _NOT_PER_STEP


def _is_step_event(values, expr: cst.BaseExpression) -> bool:
    qn = values.qualname(expr) or ""
    owner, _, name = qn.rpartition(".")
    return owner in ignite.EVENTS and name in ignite.STEP_EVENTS
