"""TSL201-TSL203: the update path of torchmetrics aggregation metrics (facts: notes/runtime.md §4).

Every rule asks the metric tracker (``analysis/metrics.py``) which metrics a call reaches, how
they were constructed and whether they live on an accelerator, and the shared hot-loop analysis
whether the call runs every step. A metric of unknown class, a configured argument
(`nan_strategy=args.nan`) or a metric we cannot place is never a finding.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind
from torchsync_lint.analysis.metric_classes import FIX_2943_RELEASE, UNKNOWN, literal, target_torchmetrics_version
from torchsync_lint.analysis.metrics import MetricSite, MetricUse, metric_tracker
from torchsync_lint.rule import Rule
from torchsync_lint.rules._fix_guards import shadowed
from torchsync_lint.rules._metric_cases import RECORD, bad, epoch_case, metric_case, ok
from torchsync_lint.types import Applicability, Fix

_NAN_CHECK_OVERRIDES = frozenset({"update", "_cast_and_nan_check_input", "forward"})

_RELEASE = ".".join(map(str, FIX_2943_RELEASE))
# Library calls that return one Python number (`time.localtime()` returns a struct, which
# `torch.as_tensor` reads as 9 numbers and `torch.full` rejects).
_NUMBER_FUNCTIONS = frozenset(
    [f"time.{f}{ns}" for f in ("time", "perf_counter", "monotonic", "process_time", "thread_time") for ns in ("", "_ns")]
    + ["math.sqrt", "math.log", "math.exp"]
)


def _update_arg(use: MetricUse, keyword: str, position: int) -> cst.Arg | None:
    """The argument of `update(value, weight)` passed as ``keyword`` or at ``position``."""
    by_keyword = next((a for a in use.call.args if a.keyword is not None and a.keyword.value == keyword), None)
    positional = [a for a in use.call.args if a.keyword is None and not a.star]
    return by_keyword or (positional[position] if len(positional) > position else None)


def _value_arg(use: MetricUse) -> cst.Arg | None:
    return _update_arg(use, "value", 0)


def _weight_arg(use: MetricUse) -> cst.Arg | None:
    return _update_arg(use, "weight", 1)


_TENSOR_READ = (
    "`{expr}` reads a device tensor into a Python number and gives it to a metric on the device, "
    "which copies it back host-to-device and waits, every step; pass the tensor (`.detach()`) instead"
)


def _is_simple_value(expr: cst.BaseExpression) -> bool:
    """An expression that `.detach()` can follow as it is (no operator to parenthesise)."""
    return isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) or bool(getattr(expr, "lpar", ()))


def _is_simple(expr: cst.BaseExpression) -> bool:
    """Side-effect free and cheap to repeat: `m`, `self.m`, `metrics["loss"]`."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return _is_simple(expr.value)
    if isinstance(expr, cst.Subscript):
        return _is_simple(expr.value) and all(isinstance(s.slice, cst.Index) and literal(s.slice.value) is not UNKNOWN for s in expr.slice)
    return False


def _with_keyword(call: cst.Call, key: str, value: str) -> cst.Call:
    """``call`` with ``key=value`` set (replaced when present, appended otherwise)."""
    new_value = cst.parse_expression(value)
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == key:
            args[i] = arg.with_changes(value=new_value)
            return call.with_changes(args=args)
    equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    last_comma = args[-1].comma if args else cst.MaybeSentinel.DEFAULT
    if isinstance(last_comma, cst.Comma):
        # `f(\n    a=1,\n)` -> `f(\n    a=1,\n    key=value,\n)`: the new argument takes over the
        # trailing comma (and the newline before `)`), the old one gets the opening indentation.
        args[-1] = args[-1].with_changes(comma=cst.Comma(last_comma.whitespace_before, call.whitespace_before_args))
        args.append(cst.Arg(new_value, keyword=cst.Name(key), equal=equal, comma=last_comma))
    else:
        args.append(cst.Arg(new_value, keyword=cst.Name(key), equal=equal))
    return call.with_changes(args=args)


def _set_argument(rule: Rule, site: MetricSite, key: str, value: str):
    """An edit that sets a constructor argument: the value in place if passed (even positionally)."""
    arg = site.argument(key)
    if arg is not None:
        return rule.edit(arg.value, value)
    return rule.edit(site.call, _with_keyword(site.call, key, value))


class _MetricRule(Rule):
    """Helpers shared by the TSL2xx rules."""

    @property
    def tracker(self):
        return metric_tracker(self.analysis)

    def _use(self, node: cst.Call, kinds: tuple[str, ...]) -> MetricUse | None:
        use = self.tracker.uses.get(node)
        return use if use is not None and use.kind in kinds else None

    def _on_device(self, site: MetricSite) -> bool:
        return self.tracker.device_of(site) == "device"


class MetricUpdateNanCheck(_MetricRule):
    """
    ## What it does
    Flags `update()` of a torchmetrics aggregation metric on an accelerator that keeps its
    NaN check, in a per-step loop.

    In full: `update()` (or a forward call `metric(x)`) of a `MeanMetric`, `SumMetric`,
    `MaxMetric`, `MinMetric`, `CatMetric`, `RunningMean` or `RunningSum` (or a subclass that
    keeps their `update`) that lives on an accelerator and keeps the NaN check (`nan_strategy`
    other than `"disable"`), in a per-step loop.

    ## Why is this bad?
    Every update runs `if nans.any() or nans_weight.any():` (torchmetrics 1.9.0
    `aggregation.py:93`): two device-to-host reads, so the host waits for the GPU twice per
    step, even when there is no NaN. A public profile of a ResNet-18 training loop on an A40
    traced most of a ~10% step-time loss to this check and the default-weight copy (TSL203).

    ## Example
    ```python
    avg_loss = MeanMetric().to(device)
    for x, y in loader:
        loss = train_step(x, y)
        avg_loss.update(loss)
    ```

    ## Use instead
    ```python
    avg_loss = MeanMetric(nan_strategy="disable").to(device)  # torchmetrics >= 1.6.2
    for x, y in loader:
        loss = train_step(x, y)
        avg_loss.update(loss)
    ```
    If NaNs must be caught, check once per epoch on the aggregated value instead.

    ## Fix safety
    Unsafe: NaN values are no longer dropped (or replaced), so one NaN poisons the mean.
    Offered only when no `update()` of that metric passes a `weight`: in torchmetrics up to
    at least 1.9.0, `nan_strategy="disable"` replaces user-supplied weights with ones
    (Lightning-AI/torchmetrics#3434). Not offered when the target torchmetrics is older than
    1.6.2, which has no `"disable"` option, nor for a subclass that defines its own `__init__`
    (its parameters are not `MeanMetric`'s: `Smoothed(0.9)` passes `0.9` as something else).
    """

    code = "TSL201"
    name = "metric-update-nan-check"
    message = (
        "`{expr}` runs torchmetrics' NaN check on the device (`if nans.any() or nans_weight.any():`), "
        "2 host syncs per step; construct `{cls}` with `nan_strategy=\"disable\"` if the values cannot be NaN{caveat}"
    )
    fix_title = 'Construct the metric with `nan_strategy="disable"`'
    runtime_observable = True

    VALID = [
        ok(metric_case('avg = MeanMetric(nan_strategy="disable").to(device)', "avg.update(loss)")),
        ok(metric_case("avg = MeanMetric()", "avg.update(loss.detach().cpu())")),  # a CPU metric
        ok(metric_case("avg = MeanMetric(nan_strategy=args.nan).to(device)", "avg.update(loss)")),  # configured
        ok(metric_case("avg = MeanMetric().to(device)", "losses = loss", after="avg.update(losses)\n")),  # once, after the loop
        ok(metric_case("class Fast(MeanMetric):\n    def _cast_and_nan_check_input(self, x, weight=None):\n        return x, weight\n\navg = Fast().to(device)", "avg.update(loss)")),
        # Parameters: bound only when every call site passes the same kind of metric.
        ok(metric_case(RECORD + "avg = MeanMetric()", "record(avg, loss.detach().cpu())")),  # a CPU metric passed in
        ok(metric_case(RECORD + "avg = MeanMetric().to(device)", "record(avg, loss)\nrecord(meter, loss)")),  # one call site passes something else
        ok(metric_case(RECORD + "avg = MeanMetric().to(device)", "record(*pending)")),  # `*args`: never guess
        ok(metric_case(RECORD + "avg = MeanMetric()\nfinal = MeanMetric().to(device)", "record(avg, loss.cpu())", after="record(final, loss)\n")),  # per step: CPU; on the device: once
        ok(epoch_case('metrics["loss"].update(loss)', 'metrics = {"loss": MeanMetric().to(device)}', call="")),  # never called: unknown
    ]
    INVALID = [
        bad(metric_case("avg = MeanMetric().to(device)", "avg.update(loss)"), "avg.update(loss)", message_contains="nan_strategy"),
        bad(
            metric_case('metrics = {"loss": MeanMetric(), "sum": SumMetric()}\nmetrics = {k: m.to(device) for k, m in metrics.items()}', 'metrics["loss"].update(loss)'),
            'metrics["loss"].update(loss)',
        ),
        bad(
            metric_case("import torchmetrics as tm\ntotal = tm.aggregation.SumMetric(nan_strategy=\"warn\")\ntotal.cuda()", "total(loss)"), "total(loss)",
        ),
        bad(metric_case("avg = MeanMetric().to(device)", "avg.update(loss, weight=torch.ones_like(loss))"), "avg.update(loss, weight", message_contains="#3434"),
        bad(
            "import lightning as L\nfrom torchmetrics import MeanMetric\n\nclass Net(L.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
            "        self.train_loss = MeanMetric()\n\n    def training_step(self, batch, batch_idx):\n        loss = self(batch[0]).sum()\n"
            "        self.train_loss.update(loss)\n        return loss\n",
            "self.train_loss.update(loss)",
        ),
        # A metric passed as a parameter: every call site passes the same kind of device metric.
        bad(metric_case(RECORD + "avg = MeanMetric().to(device)", "record(avg, loss)"), "metric.update(value)"),
        bad(
            metric_case(RECORD + "train_loss = MeanMetric().to(device)\nval_loss = MeanMetric().to(device)", "record(metric=train_loss, value=loss)", after="record(val_loss, loss)\n"),
            "metric.update(value)",
        ),
        bad(epoch_case('metrics["loss"].update(loss)', 'metrics = {"loss": MeanMetric().to(device)}'), 'metrics["loss"].update(loss)'),
        bad(
            metric_case("class Trainer:\n    def __init__(self, loss_metric):\n        self.loss_metric = loss_metric\n\n    def record(self, loss):\n"
                        "        self.loss_metric.update(loss)\n\ntrainer = Trainer(MeanMetric().to(device))", "trainer.record(loss)"),
            "self.loss_metric.update(loss)",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        use = self._use(node, ("update", "forward"))
        if use is None:
            return
        value = _value_arg(use)
        if value is not None and self.analysis.kind(value.value) is Kind.HOST_TENSOR:
            return  # a CPU tensor: the check reads host memory, no GPU sync
        for site in use.leaves:
            if site.cls.family != "aggregation" or any(site.cls.redefines(m) for m in _NAN_CHECK_OVERRIDES):
                continue  # not an aggregator, or a subclass that replaced the check
            strategy = site.setting("nan_strategy")
            if strategy is UNKNOWN or strategy == "disable" or not self._on_device(site):
                continue
            hot = self.hot(node)
            if hot is None:
                return  # one update outside the per-step path is fine
            self._report(node, use, site, hot)
            return

    def _report(self, node: cst.Call, use: MetricUse, site: MetricSite, hot) -> None:
        version, _ = target_torchmetrics_version(self.context.settings)
        weighted = self._ever_weighted(site)
        fix = None
        if version is not None and version < FIX_2943_RELEASE:
            caveat = f" (needs torchmetrics >= {_RELEASE}; the target is {'.'.join(map(str, version))})"
        elif weighted:
            caveat = ": but this metric gets a `weight`, which `\"disable\"` silently replaces by ones (Lightning-AI/torchmetrics#3434); drop the weight first or keep the check"
        else:
            caveat = " (note: `\"disable\"` would drop a user-supplied `weight`, Lightning-AI/torchmetrics#3434)"
            # A metric built in another module has its constructor there; a subclass's own
            # `__init__` has its own parameters.
            if site.call is not None and "__init__" not in site.cls.overrides:
                fix = self.make_fix(_set_argument(self, site, "nan_strategy", '"disable"'), applicability=Applicability.UNSAFE)
        self.report(node, expr=self.snippet(node), cls=site.cls.name, caveat=caveat, fix=fix, hot=hot)

    def _ever_weighted(self, site: MetricSite) -> bool:
        for use in self.tracker.uses.values():
            if use.kind in ("update", "forward") and any(leaf is site for leaf in use.leaves):
                weight = _weight_arg(use)
                if any(a.star for a in use.call.args) or (weight is not None and not self._is_ones(weight.value)):
                    return True
        return False


    def _is_ones(self, expr: cst.BaseExpression) -> bool:
        """`torch.ones_like(x)`: a weight that "disable" replacing by ones does not change."""
        return isinstance(expr, cst.Call) and self.analysis.qualname(expr.func) == "torch.ones_like"


class MetricScalarUpdate(_MetricRule):
    """
    ## What it does
    Flags a Python number (`float`, `int`, `loss.item()`, `time.perf_counter() - t0`) passed
    to `update()` of a torchmetrics aggregation metric that lives on an accelerator, in a
    per-step loop.

    ## Why is this bad?
    torchmetrics turns the number into a tensor with
    `torch.as_tensor(value, dtype=self.dtype, device=self.device)` (1.9.0 `aggregation.py:570`):
    a blocking host-to-device copy from pageable memory, so the host waits for the GPU on every
    call. A Python `weight` costs another copy (`aggregation.py:574`).

    ## Example
    ```python
    step_time = MeanMetric().to(device)
    for x, y in loader:
        t0 = time.perf_counter()
        train_step(x, y)
        step_time.update(time.perf_counter() - t0)
    ```

    ## Use instead
    ```python
    step_time = MeanMetric().to(device)
    for x, y in loader:
        t0 = time.perf_counter()
        train_step(x, y)
        dt = time.perf_counter() - t0
        step_time.update(torch.full((), dt, dtype=step_time.dtype, device=step_time.device))
    ```
    `torch.full` fills the device tensor with the scalar as a kernel argument: no copy, no
    sync (`torch.tensor(dt, device=...)` and `torch.as_tensor(dt, device=...)` do copy). Or keep
    a host-side value in a CPU metric (see TSL205 for DDP).

    When the number was read from a device tensor (`metric.update(loss.item())`, or
    `float(loss)`), pass the tensor itself: `metric.update(loss.detach())`. That removes the
    read (a TSL101 sync) as well as the copy back.

    ## Fix safety
    Safe: the tensor has the metric's own dtype and device, which is exactly what
    torchmetrics' `torch.as_tensor(value, dtype=self.dtype, device=self.device)` builds, minus
    the blocking copy. Offered only when the argument is plainly a Python number and the metric
    expression can be repeated (`m`, `self.m`, `metrics["name"]`) and is one metric (a
    `MetricCollection` has no `.dtype` or `.device`).

    `X.item()` / `float(X)` of a device tensor becomes `X.detach()`, for a collection too:
    torchmetrics casts a tensor to the metric's dtype (`x.to(self.dtype)`) as it casts the
    number, and a one-element tensor aggregates as the number does (`int(X)` truncates, so it
    keeps the `torch.full` fix). Unsafe when a metric's `nan_strategy` is a float (or set from a
    variable): torchmetrics then writes the replacement into the given tensor in place, and
    with `X.detach()` that is X's own storage.
    """

    code = "TSL202"
    name = "metric-scalar-update"
    message = "`{expr}` passes a Python number to a metric on the device: torchmetrics copies it host-to-device and waits, every step; pass `torch.full((), value, dtype=m.dtype, device=m.device)` instead"
    fix_title = "Build the value on the metric's device with `torch.full`"
    runtime_observable = True

    VALID = [
        ok(metric_case("import time\nstep_time = MeanMetric()", "step_time.update(time.perf_counter())")),  # a CPU metric
        ok(metric_case("avg = MeanMetric().to(device)", "avg.update(torch.full((), 0.5, device=device))")),
        ok(metric_case("avg = MeanMetric().to(device)", "pass", after="avg.update(3.0)\n")),  # once, after the loop
        ok(metric_case("avg = MeanMetric().to(device)", "avg.update(loss)")),  # a device tensor
        ok(metric_case("class Host(MeanMetric):\n    def update(self, value):\n        self.values.append(value)\n\nh = Host().to(device)", "h.update(1.0)")),
        ok(metric_case(RECORD + "import time\nstep_time = MeanMetric()", "t0 = time.perf_counter()\nrecord(step_time, time.perf_counter() - t0)")),  # a CPU metric passed in
        ok(metric_case(RECORD + "step_time = MeanMetric().to(device)", "record(step_time, 0.5)\nrecord(timer, 0.5)")),  # one call site passes something else
    ]
    INVALID = [
        bad(
            metric_case("import time\nstep_time = MeanMetric().to(device)", "t0 = time.perf_counter()\nstep_time.update(time.perf_counter() - t0)"),
            "step_time.update(",
        ),
        bad(metric_case('metrics = {"lr": MeanMetric()}\nmetrics = {k: m.to(device) for k, m in metrics.items()}', 'metrics["lr"].update(0.1)'), 'metrics["lr"].update(0.1)'),
        bad(
            metric_case("total = SumMetric().cuda()", "total.update(loss.item())"), "total.update(loss.item())",
            expected_fix=metric_case("total = SumMetric().cuda()", "total.update(loss.detach())"),
        ),
        bad(
            metric_case("avg = MeanMetric(nan_strategy=0.0).to(device)", "avg.update(value=float(loss))"), "avg.update(value=float(loss))",
            expected_fix=metric_case("avg = MeanMetric(nan_strategy=0.0).to(device)", "avg.update(value=loss.detach())"),
            applicability=Applicability.UNSAFE,  # the float strategy writes into loss's storage
        ),
        bad(metric_case("avg = MeanMetric().to(device)", "avg.update(loss, weight=32)"), "avg.update(loss, weight=32)"),
        bad(metric_case(RECORD + "import time\nstep_time = MeanMetric().to(device)", "t0 = time.perf_counter()\nrecord(step_time, time.perf_counter() - t0)"), "metric.update(value)"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        use = self._use(node, ("update", "forward"))
        if use is None:
            return
        sites = [s for s in use.leaves if s.cls.family == "aggregation" and not s.cls.redefines("update") and self._on_device(s)]
        if not sites or len(sites) != len(use.leaves):
            return  # not (only) device aggregators
        scalars = [a for a in (_value_arg(use), _weight_arg(use)) if a is not None and self._is_number(a.value)]
        if not scalars:
            return
        hot = self.hot(node)
        if hot is None:
            return
        message = _TENSOR_READ if all(self._device_item(a.value) is not None for a in scalars) else None
        self.report(node, message, expr=self.snippet(node), fix=self._fix(node, use, scalars, sites), hot=hot)

    def _fix(self, node: cst.Call, use: MetricUse, scalars: list[cst.Arg], sites: list) -> Fix | None:
        """`X.item()` of a device tensor: pass `X.detach()` (the read the finding is about goes
        too, where `torch.full((), X.item(), ...)` would keep TSL101's sync); another Python
        number: `torch.full` on the metric's device."""
        read = {id(a): self._device_item(a.value) for a in scalars}
        edits, needs_torch = [], False
        single = all(site.cls.family != "collection" for site in use.sites)  # a MetricCollection has no `.dtype`
        for a in scalars:
            tensor = read[id(a)]
            if tensor is not None:
                edits.append(self.edit(a.value, f"{self.code_for(tensor)}.detach()"))
            elif single and _is_simple(use.receiver) and self._is_plain_scalar(a.value):
                recv = self.code_for(use.receiver)
                edits.append(self.edit(a.value, f"torch.full((), {self.code_for(a.value)}, dtype={recv}.dtype, device={recv}.device)"))
                needs_torch = True
            else:
                return None  # a fix that leaves one of the copies would not end the finding
        if needs_torch and shadowed(self.analysis, node, "torch"):
            return None
        # A float `nan_strategy` writes its replacement into the tensor it is given, in place:
        # with `X.detach()` that is X's own storage (a NaN loss would change). Unknown: unsafe too.
        in_place = any(read.values()) and not all(isinstance(site.setting("nan_strategy"), str) for site in sites)
        safety = Applicability.UNSAFE if in_place else Applicability.SAFE
        return self.make_fix(*edits, applicability=safety, imports=("torch",) if needs_torch else ())

    def _device_item(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """``X`` of `X.item()` or `float(X)` when X is a tensor on the device (`int(X)` would
        truncate: not the same value)."""
        if not isinstance(expr, cst.Call):
            return None
        tensor = None
        if not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "item":
            tensor = expr.func.value
        elif isinstance(expr.func, cst.Name) and expr.func.value == "float" and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star and not shadowed(self.analysis, expr, "float"):
            tensor = expr.args[0].value
        if tensor is not None and self.analysis.is_device(tensor) and _is_simple_value(tensor):
            return tensor
        return None

    def _is_number(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp)):
            return False
        if literal(expr) is None or isinstance(literal(expr), (str, bool)):
            return False
        return self.analysis.kind(expr) is Kind.HOST

    def _is_plain_scalar(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A Python scalar for sure (torch.full would reject an array)."""
        if depth > 4:
            return False
        value = literal(expr)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if isinstance(expr, cst.BinaryOperation):
            return self._is_plain_scalar(expr.left, depth + 1) and self._is_plain_scalar(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._is_plain_scalar(expr.expression, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Name) and func.value in ("float", "int", "len", "round"):
                return True
            if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args:
                return True
            return (self.analysis.qualname(func) or "") in _NUMBER_FUNCTIONS
        if isinstance(expr, cst.Name):
            defs = self.analysis.values.reaching_defs(expr)
            return bool(defs) and all(d.how in ("assign", "aug") and d.value is not None and self._is_plain_scalar(d.value, depth + 1) for d in defs)
        return False


class MetricDefaultWeight(_MetricRule):
    """
    ## What it does
    Flags `MeanMetric.update(value)` with no `weight` on a device metric in a per-step loop,
    for torchmetrics older than 1.6.2.

    In full: `MeanMetric.update(value)` (or `RunningMean`, or `metric(value)`) with no `weight`,
    on a metric that lives on an accelerator, in a per-step loop, when the target torchmetrics
    is older than 1.6.2, the first release with Lightning-AI/torchmetrics#2943.

    ## Why is this bad?
    Before 1.6.2, `MeanMetric.update(value, weight=1.0)` turned the default weight into a
    tensor with `torch.as_tensor(1.0, device=self.device)`: a blocking host-to-device copy on
    every update, even when `value` is already on the device. From 1.6.2 the default is
    `weight=None` -> `torch.ones_like(value)`, with no copy.

    ## Options
    `torchmetrics-version = "1.6.1"` in `[tool.torchsync-lint]` sets the target release;
    without it the installed torchmetrics version is read from its package metadata (no
    import). If neither is known the rule stays silent.

    ## Example
    ```python
    avg_loss = MeanMetric().to(device)  # torchmetrics 1.6.1
    for x, y in loader:
        avg_loss.update(loss)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        avg_loss.update(loss, weight=torch.ones_like(loss))
    ```
    or upgrade torchmetrics to 1.6.2 or later.

    ## Fix safety
    Safe: `torch.ones_like(value)` is what the default `1.0` broadcasts to, and torchmetrics
    casts both to its own dtype. Offered only when `value` is a device tensor expression that
    can be repeated (a name, attribute or literal subscript).
    """

    code = "TSL203"
    name = "metric-default-weight"
    message = "`{expr}` has no `weight`: torchmetrics {version} ({source}) copies the default `weight=1.0` to the device and waits, every step; pass `weight=torch.ones_like(value)` or upgrade to torchmetrics >= " + _RELEASE
    fix_title = "Pass `weight=torch.ones_like(value)`"
    runtime_observable = True

    _OLD = {"torchmetrics-version": "1.6.1"}
    VALID = [
        ok(metric_case("avg = MeanMetric().to(device)", "avg.update(loss)"), config={"torchmetrics-version": _RELEASE}),
        ok(metric_case("avg = MeanMetric().to(device)", "avg.update(loss, weight=torch.ones_like(loss))"), config=_OLD),
        ok(metric_case("avg = MeanMetric()", "avg.update(loss.cpu())"), config=_OLD),  # a CPU metric
        ok(metric_case("total = SumMetric().to(device)", "total.update(loss)"), config=_OLD),  # no weight argument
        ok(metric_case("avg = MeanMetric().to(device)", "avg.update(loss)"), config={"torchmetrics-version": "1.9.0"}),
        ok(metric_case(RECORD + "avg = MeanMetric()", "record(avg, loss.cpu())"), config=_OLD),  # a CPU metric passed in
        ok(metric_case(RECORD + "avg = MeanMetric().to(device)\ntotal = SumMetric().to(device)", "record(avg, loss)\nrecord(total, loss)"), config=_OLD),  # two classes: unknown
    ]
    INVALID = [
        bad(metric_case("avg = MeanMetric().to(device)", "avg.update(loss)"), "avg.update(loss)", config=_OLD, message_contains="1.6.1"),
        bad(
            metric_case('metrics = {"avg_loss": MeanMetric()}\nmetrics = {n: m.to(device) for n, m in metrics.items()}', 'metrics["avg_loss"].update(loss)'),
            'metrics["avg_loss"].update(loss)', config={"torchmetrics-version": "1.4.0"},
        ),
        bad(metric_case("from torchmetrics import RunningMean\nrun = RunningMean(window=10).cuda()", "run(loss)"), "run(loss)", config={"torchmetrics-version": "1.0.3"}),
        bad(epoch_case('metrics["loss"].update(loss)', 'metrics = {"loss": MeanMetric(nan_strategy="disable").to(device)}'), 'metrics["loss"].update(loss)', config=_OLD),
    ]

    def inert(self) -> bool:
        # Without a configured version the answer is the installed torchmetrics': another
        # machine may report here, so this machine does not call a `# noqa: TSL203` unused.
        version, source = target_torchmetrics_version(self.context.settings)
        return version is None or source != "configured"

    def visit_Call(self, node: cst.Call) -> None:
        use = self._use(node, ("update", "forward"))
        if use is None or _weight_arg(use) is not None or any(a.star for a in node.args):
            return
        sites = [s for s in use.leaves if s.cls.weighted and not s.cls.redefines("update") and self._on_device(s)]
        if not sites:
            return
        version, source = target_torchmetrics_version(self.context.settings)
        if version is None or version >= FIX_2943_RELEASE:
            return  # fixed (or unknown): no copy of the default weight
        hot = self.hot(node)
        if hot is None:
            return
        fix = None
        value = _value_arg(use)
        if value is not None and value.keyword is None and _is_simple(value.value) and self.analysis.is_device(value.value) and not shadowed(self.analysis, node, "torch"):
            fix = self.make_fix(self.edit(node, _with_keyword(node, "weight", f"torch.ones_like({self.code_for(value.value)})")), imports=("torch",))
        self.report(node, expr=self.snippet(node), version=".".join(map(str, version)), source=source, fix=fix, hot=hot)
