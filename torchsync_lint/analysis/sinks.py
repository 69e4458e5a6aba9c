"""Logging sinks: is this call one, and which argument expressions does it read on the host?

Built once per module through ``analysis.extension("sinks", SinkAnalysis)``. The library
knowledge is the table in ``torchsync_lint.knowledge.logging_sinks``; this module matches calls
against it:

- a qualified function (``wandb.log``) through the import map;
- a method of an object made by a known call (``SummaryWriter(...).add_scalar``): the receiver's
  maker comes from ``ValueAnalysis.origin_qualname`` (local names today), plus argument-less
  getters and subscripts in between (``Task.init().get_logger()``, ``run["loss"]``);
- Lightning's ``self.log``/``self.log_dict`` in a LightningModule hook, with Lightning's own
  rules for when it reads the value (``prog_bar``, ``on_step``, the hook's defaults).

It answers with the expressions read (each value of a dict/list literal the sink looks inside)
and says when: ``"call"`` (inside the call itself) or ``"step"`` (Lightning reads it later in
the same step). Whether an expression is a device tensor, and whether the call runs per step,
are the rule's questions to the value and hot-loop analyses. Unknown stays silent: an object
of unknown origin, a `prog_bar=flag` whose value is not a literal, `**kwargs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchsync_lint.analysis import trainer_loggers
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import is_none
from torchsync_lint.analysis.metrics import metric_tracker
from torchsync_lint.analysis.values import ValueAnalysis
from torchsync_lint.knowledge import logging_sinks as table

_MAX_DEPTH = 6
_UNKNOWN = object()  # a keyword whose value is not a literal


@dataclass(frozen=True)
class HostRead:
    """An argument expression a sink reads on the host."""

    expr: cst.BaseExpression
    library: str
    where: str  # the library's read, for the message
    when: str = "call"  # "call": inside the call; "step": later in the same training step
    # True when the sink reads a device value that ``expr`` is not itself: a torchmetrics
    # metric on the device, whose batch value from this step's forward Lightning reads.
    device_value: bool = False
    gate: str | None = None  # the library reads it on some steps only: says which


@dataclass(frozen=True)
class _Origin:
    maker: str  # the qualified call that made the object
    via: tuple[str, ...]  # getters / "[]" applied after it
    call: cst.Call | None  # the maker call, when it is in this module


class SinkAnalysis:
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.values: ValueAnalysis = analysis.values
        self.index = analysis.index
        self._has_logger: bool | None = None
        self._by_function = {name: sink for sink in table.SINKS for name in sink.functions}
        self._by_method: dict[str, list[table.Sink]] = {}
        for sink in table.SINKS:
            for method in sink.methods:
                self._by_method.setdefault(method, []).append(sink)

    # -- public -----------------------------------------------------------------------------
    def host_reads(self, call: cst.Call) -> list[HostRead]:
        """The argument expressions ``call`` reads on the host, when it is a logging sink."""
        sink = self._by_function.get(self.values.qualname(call.func) or "")
        if sink is None and isinstance(call.func, cst.Attribute):
            sink = self._method_sink(call, call.func)
            if sink is None:
                return self._lightning_reads(call, call.func)
        if sink is None:
            return []
        exprs = [e for reads in sink.reads for e in _values_read(_argument(call, reads), reads)]
        if sink.other_keywords:
            named = {r.keyword for r in sink.reads} | sink.ignore_keywords
            exprs += [a.value for a in call.args if a.keyword is not None and a.keyword.value not in named]
        return [HostRead(e, sink.library, sink.where) for e in exprs]

    # -- library objects ----------------------------------------------------------------------
    def _method_sink(self, call: cst.Call, func: cst.Attribute) -> table.Sink | None:
        candidates = self._by_method.get(func.attr.value)
        if not candidates:
            return None
        origin = self._origin(func.value, 0)
        if origin is None:
            return None
        for sink in candidates:
            if origin.maker in sink.makers and origin.via == sink.via and self._maker_keyword_ok(sink, origin):
                return sink
        return None

    @staticmethod
    def _maker_keyword_ok(sink: table.Sink, origin: _Origin) -> bool:
        if sink.maker_keyword is None:
            return True
        if origin.call is None:
            return False  # the maker is elsewhere: its arguments are unknown
        value = _keyword(origin.call, sink.maker_keyword, None)
        return value is not None and value is not _UNKNOWN and not (isinstance(value, cst.Name) and value.value == "None")

    def _origin(self, expr: cst.BaseExpression, depth: int) -> _Origin | None:
        """Which call made ``expr``: `SummaryWriter(...)`, through local names, getters and
        subscripts; else whatever ``origin_qualname`` knows (without the maker call)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            qn = self.values.qualname(expr.func)
            if qn is not None:
                return _Origin(qn, (), expr)
            if isinstance(expr.func, cst.Attribute) and not expr.args:  # `task.get_logger()`
                return self._extend(self._origin(expr.func.value, depth + 1), expr.func.attr.value)
            return None
        if isinstance(expr, cst.IfExp):  # `SummaryWriter() if log else None`
            sides = [s for s in (expr.body, expr.orelse) if not is_none(s)]
            return self._origin(sides[0], depth + 1) if len(sides) == 1 else None
        if isinstance(expr, cst.Subscript):  # `run["train/loss"]`
            return self._extend(self._origin(expr.value, depth + 1), "[]")
        if isinstance(expr, cst.Name):
            defs = self.values.reaching_defs(expr)
            if defs and all(d.how == "assign" and d.value is not None for d in defs):
                # `writer = SummaryWriter(...)` or `writer = None` (logging off): the writer
                origins = {self._origin(d.value, depth + 1) for d in defs if not is_none(d.value)}
                if len(origins) == 1:
                    return origins.pop()
                return None
        qn = self.values.origin_qualname(expr)
        return _Origin(qn, (), None) if qn is not None else None

    @staticmethod
    def _extend(origin: _Origin | None, step: str) -> _Origin | None:
        return _Origin(origin.maker, (*origin.via, step), origin.call) if origin is not None else None

    # -- Lightning ----------------------------------------------------------------------------
    def _lightning_reads(self, call: cst.Call, func: cst.Attribute) -> list[HostRead]:
        """`self.log(name, value, ...)` / `self.log_dict(values, ...)` in a LightningModule hook,
        when Lightning reads the value on the host every step (see the table's notes)."""
        reads = table.LIGHTNING_LOG_METHODS.get(func.attr.value)
        hook_func = self.index.enclosing_function(call)
        if reads is None or hook_func is None or not isinstance(func.value, cst.Name):
            return []
        hook = table.LIGHTNING_HOOKS.get(hook_func.name.value) or self._calling_hook(hook_func)
        info = self.index.class_of_method.get(hook_func)
        params = hook_func.params.params
        if hook is None or info is None or not params or params[0].name.value != func.value.value:
            return []
        if not self.values.is_lightning_class(info.node):
            return []
        # log(name, value, prog_bar, logger, on_step, ...); log_dict(dictionary, prog_bar, logger, on_step, ...)
        first = 2 if func.attr.value == "log" else 1
        prog_bar = _literal(_keyword(call, "prog_bar", first), default=False)
        logger = _literal(_keyword(call, "logger", first + 1), default=True)
        on_step = _literal(_keyword(call, "on_step", first + 2), default=hook.default_on_step)
        if on_step is not True:
            return []  # per epoch, or unknown
        gate = None
        if hook.training:
            if prog_bar is True:
                where = table.LIGHTNING_TRAINING_WHERE
            elif prog_bar is False and logger is True:
                if not self._trainer_has_logger():
                    return []  # no logger (or a configured one): Lightning converts the values only for a logger
                where, gate = table.LIGHTNING_LOGGER_WHERE, table.LIGHTNING_LOGGER_GATE  # every `log_every_n_steps`
            else:
                return []  # configured: unknown
        else:
            if not (prog_bar is True or (logger is True and self._trainer_has_logger())):
                return []
            where = table.LIGHTNING_EVALUATION_WHERE
        exprs = _values_read(_argument(call, reads), reads)
        reads = [HostRead(e, "lightning", where, "step", self._forwarded_device_metric(e, hook_func), gate) for e in exprs]
        # A metric object handed to the logger is computed by Lightning on its own schedule: only
        # the progress bar's per-step read of its batch value counts.
        return [r for r in reads if not (gate and (r.device_value or metric_tracker(self.analysis).sites_of(r.expr)))]

    def _calling_hook(self, helper: cst.FunctionDef):
        """The Lightning hook a helper method logs for: `_step(batch, "train")` called from
        `training_step` logs with the training defaults (a training hook wins over evaluation
        ones when several call it)."""
        hooks = []
        for call in self.index.call_sites(helper):
            caller = self.index.enclosing_function(call)
            hook = table.LIGHTNING_HOOKS.get(caller.name.value) if caller is not None else None
            if hook is not None and self.index.class_of_method.get(caller) is self.index.class_of_method.get(helper):
                hooks.append(hook)
        return next((h for h in hooks if h.training), hooks[0] if hooks else None)

    def _trainer_has_logger(self) -> bool:
        """Does a Trainer that fits this module have a logger (analysis/trainer_loggers.py)? The
        Trainers this module builds answer; without one, those of the modules the project view
        connects to this one; with none anywhere, Lightning's default (a logger). A configured
        logger (`logger=cfg["logger"]`) is unknown: no."""
        if self._has_logger is None:
            states = trainer_loggers.module_logger_states(self.analysis) or self.analysis.env.trainer_logger_states()
            read = trainer_loggers.logger_read(states)
            self._has_logger = read if read is not None else not states
        return self._has_logger

    def _forwarded_device_metric(self, expr: cst.BaseExpression, hook_func: cst.FunctionDef) -> bool:
        """A metric on the device whose forward (`self.acc(preds, y)`) runs in this hook: Lightning
        logs its `_forward_cache`, the batch value, and converts it like a tensor. A metric only
        `update()`d has no batch value and is computed at epoch end."""
        parts = dotted_parts(expr)
        tracker = metric_tracker(self.analysis)
        sites = tracker.sites_of(expr) if parts else []
        if not sites or not all(tracker.device_of(site) == "device" for site in sites):
            return False
        return any(dotted_parts(c.func) == parts and c.args for c in self.index.calls if self.index.enclosing_function(c) is hook_func)


def _argument(call: cst.Call, reads: table.Reads) -> cst.BaseExpression | None:
    if reads.keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == reads.keyword:
                return arg.value
    if reads.position is not None:
        positional = []
        for arg in call.args:
            if arg.keyword is not None:
                continue
            if arg.star:
                return None  # `*args`: positions unknown from here on
            positional.append(arg.value)
        if reads.position < len(positional):
            return positional[reads.position]
    return None


def _values_read(expr: cst.BaseExpression | None, reads: table.Reads) -> list[cst.BaseExpression]:
    """The expressions read: each value of a dict/list/tuple literal the sink looks inside,
    else the argument itself (a name bound to a dict holding a device tensor is a device value)."""
    if expr is None:
        return []
    if reads.container and isinstance(expr, cst.Dict):
        return [el.value for el in expr.elements if isinstance(el, cst.DictElement)]
    if reads.container and isinstance(expr, (cst.List, cst.Tuple)):
        return [el.value for el in expr.elements if not isinstance(el, cst.StarredElement)]
    return [expr]


def _keyword(call: cst.Call, name: str, position: int | None) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if position is not None and position < len(positional) and not any(a.star for a in positional[: position + 1]):
        return positional[position].value
    if any(a.star == "**" for a in call.args):
        return _UNKNOWN  # type: ignore[return-value]
    return None


def _literal(expr, default):
    """True/False for those literals, ``default`` when absent or `None` (Lightning's "use the
    default"), else _UNKNOWN."""
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return default
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return _UNKNOWN
