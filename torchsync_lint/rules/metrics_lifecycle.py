"""TSL204-TSL206: computing, syncing and counting classes (facts: notes/runtime.md §4).

Shares the helpers of ``rules/metrics.py`` (TSL201-TSL203, the update path of aggregation
metrics) and the metric tracker of ``analysis/metrics.py``.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.metric_classes import UNKNOWN
from torchsync_lint.analysis.metrics import MetricSite
from torchsync_lint.rules._metric_cases import bad, epoch_case, metric_case, ok

_LOG = "def log_metric(metric):\n    print(metric.compute())\n\n"  # computes whatever it is given
from torchsync_lint.rules.metrics import _MetricRule


class MetricComputeInLoop(_MetricRule):
    """
    ## What it does
    Flags `metric.compute()` (or `MetricCollection.compute()`) of a device metric on every step
    of a per-step loop, not gated by a step interval (`if step % 100 == 0:`).

    ## Why is this bad?
    `compute()` reduces the whole accumulated state and, under DDP, first gathers it from
    every rank (`sync_on_compute=True`): torchmetrics builds shape tensors and compares them
    on the host, and the collective stalls every step. Classification metrics with
    macro averaging also mask their weights with a boolean index (a sync). The value is
    almost always read on the host right after. Accumulating with `update()` and computing
    every N steps (or once per epoch) gives the same numbers for a fraction of the cost; for
    a per-batch value, `metric(x)` (forward) returns it without a cross-rank gather.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        acc.update(model(x), y)
        log(acc.compute())
    ```

    ## Use instead
    ```python
    for step, (x, y) in enumerate(loader):
        acc.update(model(x), y)
        if (step + 1) % 100 == 0:
            log(acc.compute())
            acc.reset()
    ```

    ## Known problems
    In a single process, `compute()` of an aggregation metric does not always sync by itself,
    so the runtime verifier does not require a sync at the line (runtime_observable=False).
    """

    code = "TSL204"
    name = "metric-compute-in-loop"
    message = "`{expr}` computes (and under DDP gathers across ranks) the full metric state every step; compute every N steps or once per epoch, or use `metric(x)` for a per-batch value"
    runtime_observable = False

    VALID = [
        ok(metric_case("acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)\nif (step + 1) % 100 == 0:\n    print(acc.compute())\n    acc.reset()")),
        ok(metric_case("acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)", after="final = acc.compute()\n")),
        ok(metric_case("acc = MulticlassAccuracy(num_classes=4).to(device)", "batch_acc = acc(logits, y)")),  # forward: batch value
        ok(metric_case("stats = Stats()", "s = stats.compute()")),  # not a metric we know
        ok(metric_case(_LOG + "acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)\nif (step + 1) % 100 == 0:\n    log_metric(acc)")),  # the call is gated
        ok(metric_case(_LOG + "acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)\nlog_metric(acc)\nlog_metric(stats)")),  # one call site passes something else
    ]
    INVALID = [
        bad(metric_case("acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)\nvalue = acc.compute()"), "value = acc.compute()"),
        bad(
            metric_case('metrics = {"loss": MeanMetric(), "acc": MulticlassAccuracy(4)}\nmetrics = {n: m.to(device) for n, m in metrics.items()}',
                        "results = {n: m.compute() for n, m in metrics.items()}"),
            "results = {n: m.compute()",
        ),
        bad(metric_case("coll = MetricCollection([MulticlassAccuracy(4), MulticlassF1Score(4)]).to(device)", "coll.update(logits, y)\nout = coll.compute()"), "out = coll.compute()"),
        bad(metric_case(_LOG + "acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)\nlog_metric(acc)"), "print(metric.compute())"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        use = self._use(node, ("compute",))
        if use is None or not any(self._on_device(s) for s in use.leaves):
            return
        hot = self.hot(node)
        if hot is None or hot.gated:
            return  # outside the per-step path, or every N steps: that is the intended use
        self.report(node, expr=self.snippet(node), hot=hot)


class CpuMetricDistributedSync(_MetricRule):
    """
    ## What it does
    Flags a metric left on the CPU in a NCCL job: its `compute()` gathers the state across
    ranks through NCCL, which cannot move CPU tensors.

    In full: the constructor of a metric that stays on the CPU while the script initialises a
    NCCL process group (`init_process_group("nccl")`) and leaves `sync_on_compute=True` (the
    default), when the metric's `compute()` runs (or a LightningModule logs it).

    ## Why is this bad?
    Under DDP `compute()` gathers the metric state across ranks through the default process
    group. NCCL only moves CUDA tensors, so a CPU metric fails with
    `RuntimeError: No backend type associated with device type cpu`, typically at the end of
    the first epoch. Moving the metric to the GPU fixes the error but makes Python-number
    updates copy host-to-device every step (TSL202).

    ## Example
    ```python
    dist.init_process_group("nccl")
    step_time = MeanMetric()
    for x, y in loader:
        step_time.update(time.perf_counter() - t0)
    print(step_time.compute())
    ```

    ## Use instead
    ```python
    step_time = MeanMetric(sync_on_compute=False)  # a per-rank host value, no gather
    # or, to aggregate across ranks: MeanMetric(process_group=gloo_group)
    # with gloo_group = dist.new_group(backend="gloo")
    ```
    """

    code = "TSL205"
    name = "cpu-metric-distributed-sync"
    message = "`{cls}` stays on the CPU but the script uses a NCCL process group and `sync_on_compute` is on: `compute()` will fail with \"No backend type associated with device type cpu\"; pass `sync_on_compute=False` (per-rank value) or `process_group=` a gloo group"
    runtime_observable = False

    _NCCL = "import torch.distributed as dist\ndist.init_process_group(\"nccl\", rank=0, world_size=1)\n"
    VALID = [
        ok(metric_case(_NCCL + "avg = MeanMetric(sync_on_compute=False)", "avg.update(1.0)", after="print(avg.compute())\n")),
        ok(metric_case(_NCCL + "avg = MeanMetric().to(device)", "avg.update(loss)", after="print(avg.compute())\n")),
        ok(metric_case('import torch.distributed as dist\ndist.init_process_group("gloo")\navg = MeanMetric()', "avg.update(1.0)", after="print(avg.compute())\n")),
        ok(metric_case("import torch.distributed as dist\ndist.init_process_group(backend=args.backend)\navg = MeanMetric()", "avg.update(1.0)", after="print(avg.compute())\n")),
        ok(metric_case(_NCCL + "avg = MeanMetric(process_group=gloo_group)", "avg.update(1.0)", after="print(avg.compute())\n")),
        ok(metric_case(_NCCL + _LOG + "avg = MeanMetric()", "avg.update(1.0)")),  # the function that computes is never called
    ]
    INVALID = [
        bad(metric_case(_NCCL + "avg = MeanMetric()", "avg.update(1.0)", after="print(avg.compute())\n"), "avg = MeanMetric()"),
        bad(
            metric_case("from torch import distributed\ndistributed.init_process_group(backend=\"nccl\")\ntimes = {\"step\": MeanMetric(sync_on_compute=True)}", 'times["step"].update(2.0)',
                        after='print(times["step"].compute())\n'),
            'times = {"step": MeanMetric(',
        ),
        bad(
            metric_case(_NCCL + "coll = MetricCollection({'t': SumMetric()})", "coll.update(1.0)", after="coll.compute()\n"),
            "SumMetric()})",
        ),
        bad(metric_case(_NCCL + _LOG + "avg = MeanMetric()", "avg.update(1.0)", after="log_metric(avg)\n"), "avg = MeanMetric()"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        site = self.tracker.sites.get(node)
        if site is None or site.cls.family == "collection" or not self.tracker.nccl_inits:
            return  # collections are reported at their members' constructors
        if id(site) not in self.tracker.computed_sites() or self.tracker.device_of(site) != "cpu":
            return  # never computed (no gather), or on the accelerator
        if site.setting("sync_on_compute") is not True:
            return  # False, or configured
        if any(site.argument(k) is not None for k in ("process_group", "dist_sync_fn", "distributed_available_fn")):
            return  # a custom group or sync function may well be gloo
        self.report(node, cls=site.cls.name)


class ClassificationMetricBincount(_MetricRule):
    """
    ## What it does
    Flags `update()` of a multiclass classification metric on an accelerator that counts
    classes with `torch.bincount`, in a per-step loop.

    In full: `update()` (or `metric(preds, target)`) in a per-step loop of a multiclass
    classification metric on an accelerator that counts classes with `torch.bincount`:
    `MulticlassAccuracy`/`Precision`/`Recall`/`F1Score`/`FBetaScore`/`StatScores`/...
    (and `Accuracy(task="multiclass", ...)` etc.) with `average` `"macro"` (the `Multiclass*`
    default), `"weighted"`, `"none"` or `None`, and multiclass confusion matrices / Jaccard
    index whatever their `average`.

    ## Why is this bad?
    torchmetrics builds the confusion counts with `torch.bincount` (1.9.0
    `utilities/data.py:206`). The CUDA kernel reads `min()` and `max()` of its input back to
    the host to size the output: two syncs per update. `validate_args=False` removes the
    `unique` sync of label inputs but not the `bincount` one.

    ## Example
    ```python
    acc = MulticlassAccuracy(num_classes=10).to(device)  # average="macro"
    for x, y in loader:
        acc.update(model(x), y)
    ```

    ## Use instead
    ```python
    acc = MulticlassAccuracy(num_classes=10, average="micro").to(device)  # global accuracy
    ```
    or keep macro averaging and call `torch.use_deterministic_algorithms(True)` once: torchmetrics
    then counts with a one-hot comparison that needs no host read (it also makes every other op
    deterministic, which can be slower or raise for ops without a deterministic kernel).
    `Accuracy(task="multiclass", num_classes=10)` already defaults to `average="micro"`.
    """

    code = "TSL206"
    name = "classification-metric-bincount"
    message = "`{expr}` updates `{cls}` ({why}) with `torch.bincount`, whose CUDA kernel reads min/max back to the host: 2 syncs per step; {advice} (`validate_args=False` removes the `unique` sync but not this one)"
    runtime_observable = True

    VALID = [
        ok(metric_case('acc = MulticlassAccuracy(num_classes=4, average="micro").to(device)', "acc.update(logits, y)")),
        ok(metric_case('import torchmetrics\nacc = torchmetrics.Accuracy(task="multiclass", num_classes=4).to(device)', "acc.update(logits, y)")),  # micro by default
        ok(metric_case("torch.use_deterministic_algorithms(True)\nacc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)")),
        ok(metric_case("acc = MulticlassAccuracy(num_classes=4)", "acc.update(logits.cpu(), y.cpu())")),  # a CPU metric
        ok(metric_case("acc = MulticlassAccuracy(num_classes=4, average=cfg.average).to(device)", "acc.update(logits, y)")),
        ok(metric_case('import torchmetrics\nacc = torchmetrics.Accuracy(task="binary").to(device)', "acc.update(logits[:, 0], y)")),
        ok(epoch_case("metrics.update(logits, y)", 'metrics = MulticlassAccuracy(num_classes=4, average="micro").to(device)')),  # micro, passed in
        ok(epoch_case("metrics.update(logits.cpu(), y.cpu())", "metrics = MulticlassAccuracy(num_classes=4)")),  # a CPU metric passed in
        ok(epoch_case("metrics.update(logits, y)", 'metrics = MulticlassAccuracy(num_classes=4).to(device)\nval_metrics = MulticlassAccuracy(num_classes=4, average="micro").to(device)',
                      call="train_epoch(loader, metrics)\n    train_epoch(val_loader, val_metrics)")),  # two configurations: unknown
    ]
    INVALID = [
        bad(metric_case("acc = MulticlassAccuracy(num_classes=4).to(device)", "acc.update(logits, y)"), "acc.update(logits, y)", message_contains="macro"),
        bad(
            metric_case('import torchmetrics as tm\nf1 = tm.F1Score(task="multiclass", num_classes=4, average="weighted", validate_args=False).to(device)', "f1(logits, y)"),
            "f1(logits, y)", message_contains="validate_args=False",
        ),
        bad(
            metric_case('metrics = {"loss": MeanMetric(), "f1": MulticlassF1Score(4)}\nmetrics = {k: m.to(device) for k, m in metrics.items()}',
                        'for name, metric in metrics.items():\n    if name != "loss":\n        metric.update(logits, y)'),
            "metric.update(logits, y)",
        ),
        bad(metric_case("coll = MetricCollection([MulticlassAccuracy(4, average=None)]).to(device)", "coll.update(logits, y)"), "coll.update(logits, y)"),
        bad(metric_case("import torchmetrics\ncm = torchmetrics.ConfusionMatrix(task='multiclass', num_classes=4).to(device)", "cm.update(logits, y)"), "cm.update(", message_contains="use_deterministic_algorithms"),
        bad(epoch_case("metrics.update(logits, y)", "metrics = MetricCollection([MulticlassAccuracy(4), MulticlassF1Score(4)]).to(device)"), "metrics.update(logits, y)"),
        bad(epoch_case("for metric in metrics.values():\n            metric(logits, y)", 'metrics = {"f1": MulticlassF1Score(4).to(device)}'), "metric(logits, y)"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        use = self._use(node, ("update", "forward"))
        if use is None or self.tracker.deterministic:
            return  # deterministic mode: torchmetrics counts without bincount (data.py:202)
        for site in use.leaves:
            why = self._bincount_reason(site)
            if why is None or not self._on_device(site):
                continue
            hot = self.hot(node)
            if hot is None:
                return
            advice = "call `torch.use_deterministic_algorithms(True)` (torchmetrics then counts without bincount)"
            if not site.cls.bincount_always:
                advice = "use `average=\"micro\"` if a global score will do, or " + advice
            self.report(node, expr=self.snippet(node), cls=site.cls.name, why=why, advice=advice, hot=hot)
            return

    @staticmethod
    def _bincount_reason(site: MetricSite) -> str | None:
        cls = site.cls
        if cls.family != "classification" or cls.redefines("update") or site.task != "multiclass":
            return None
        if cls.bincount_always:
            return "confusion counts"
        average = site.setting("average")
        if average is UNKNOWN or average not in ("macro", "weighted", "none", None):
            return None
        if site.setting("top_k") != 1 or site.setting("multidim_average") != "global":
            return None  # one-hot path: no bincount
        return f"average={average!r}".replace("'", '"')
