"""Does a Lightning `Trainer` have a logger? Lightning converts what `self.log(...)` (without
`prog_bar`) records to Python numbers only for a logger: with `logger=False` (or `[]`) the values
go nowhere and nothing is read on the host.

A Trainer's logger is one of three states:

- ``"present"``: the default (`logger` absent, `None` or `True`), a logger object (a Lightning
  logger class), or a non-empty list of them;
- ``"none"``: `False` or an empty list;
- ``"unknown"``: a value the user configures (`logger=cfg["logger"]`, `args.logger`), a project
  helper's result, `**kwargs`: the user decides, so the analysis says nothing.

The module analysis reads the Trainers it builds; the project summary records the same states
(field ``lightning_loggers``) so that a LightningModule defined in one module and fitted in
another gets the answer of the module that builds the Trainer.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import is_none
from torchsync_lint.knowledge import lightning

PRESENT, NONE, UNKNOWN = "present", "none", "unknown"
_MAX_DEPTH = 4


def module_logger_states(analysis) -> list[str]:
    """The logger state of each Lightning Trainer this module builds, in source order."""
    values = analysis.values
    return [
        logger_state(values, _logger_argument(call))
        for call in analysis.index.calls
        if values.qualname(call.func) in lightning.TRAINERS
    ]


def logger_read(states: list[str]) -> bool | None:
    """Is a plain `self.log` value read for a logger? True when some Trainer has one, False
    when every Trainer has none, None (unknown: silent) when a Trainer's logger is configured
    and none is known to have one. No Trainer seen: None, the caller decides."""
    if PRESENT in states:
        return True
    if UNKNOWN in states:
        return None
    return False if states else None


def _logger_argument(call: cst.Call):
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "logger":
            return arg.value
    if call.args and any(arg.star or arg.keyword is None for arg in call.args):
        # `Trainer(**cfg)`, `Trainer(*args)`, or positional arguments (Lightning 1.x took
        # `logger` first): the logger may be among them
        return UNKNOWN
    return None


def logger_state(values, expr, depth: int = 0) -> str:
    if expr is UNKNOWN:
        return UNKNOWN
    if expr is None or is_none(expr):
        return PRESENT  # Lightning's default: TensorBoard or CSV
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return PRESENT if expr.value == "True" else NONE
    if isinstance(expr, (cst.List, cst.Tuple)):
        return PRESENT if expr.elements else NONE
    if isinstance(expr, cst.Call):
        qualname = values.qualname(expr.func) or ""
        return PRESENT if qualname.startswith(lightning.LOGGER_MODULES) else UNKNOWN
    if isinstance(expr, cst.Name) and depth < _MAX_DEPTH:
        defs = values.reaching_defs(expr)
        if defs and all(d.how == "assign" and d.value is not None for d in defs):
            states = {logger_state(values, d.value, depth + 1) for d in defs}
            return states.pop() if len(states) == 1 else UNKNOWN
    return UNKNOWN
