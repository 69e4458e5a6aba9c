"""TSL201-TSL206: metric tracking through containers, attributes and aliases; version logic; fixes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from tests._apply_fixes import apply_fixes

from torchsync_lint import api
from torchsync_lint.analysis import metric_classes
from torchsync_lint.analysis import metrics as metrics_analysis
from torchsync_lint.engine import lint_source
from torchsync_lint.rules._metric_cases import LOOP, METRIC_PRELUDE, metric_case
from torchsync_lint.types import Applicability

ROOT = Path(__file__).resolve().parent.parent
CODES = {f"TSL20{i}" for i in range(1, 7)}


def lint(code: str, settings: dict | None = None, codes: set[str] | None = None):
    return [f for f in lint_source(code, "t.py", codes or CODES, settings or {}) if f.code in CODES]


def found(code: str, settings: dict | None = None) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint(code, settings)}


def line_of(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


def fixed(code: str, rule: str, settings: dict | None = None) -> str:
    findings = [f for f in lint(code, settings) if f.code == rule and f.fix is not None]
    assert findings, f"no fix from {rule}"
    return apply_fixes(code, findings[:1], Applicability.UNSAFE)


# -- tracking ----------------------------------------------------------------------------------

SEED_LOOP = metric_case(
    textwrap.dedent(
        """\
        from torchmetrics import Accuracy, F1Score, Precision, Recall
        metrics = {
            "avg_loss": MeanMetric(),
            "accuracy": Accuracy(task="multiclass", num_classes=4),
            "precision": Precision(task="multiclass", num_classes=4, average="macro"),
            "recall": Recall(task="multiclass", num_classes=4),
            "f1_score": F1Score(task="multiclass", num_classes=4),
        }
        metrics = {name: metric.to(device) for name, metric in metrics.items()}
        """
    ),
    textwrap.dedent(
        """\
        metrics["avg_loss"].update(loss)
        for name, metric in metrics.items():
            if name != "avg_loss":
                metric.update(logits, y)
        if (step + 1) % 100 == 0:
            results = {name: metric.compute() for name, metric in metrics.items()}
            for metric in metrics.values():
                metric.reset()
        """
    ),
)


def test_seed_loop_through_dict_comprehension_and_items_loop():
    # The guard keeps the MeanMetric out of the classification update; only the macro precision
    # bincounts (the task= wrappers default to "micro"); the gated compute is not TSL204.
    assert found(SEED_LOOP) == {
        (line_of(SEED_LOOP, 'metrics["avg_loss"].update(loss)'), "TSL201"),
        (line_of(SEED_LOOP, "metric.update(logits, y)"), "TSL206"),
    }


def test_subscript_assignment_replaces_a_member():
    # The post's step 2: `metrics["avg_loss"] = NoNanMeanMetric().to(device)`.
    code = SEED_LOOP.replace(
        "for step in range(100):",
        'metrics["avg_loss"] = MeanMetric(nan_strategy="disable").to(device)\nfor step in range(100):',
    )
    assert "TSL201" not in {c for _, c in found(code)}


def test_dynamic_subclass_is_unknown_and_silent():
    # `suppress_nan_check(MeanMetric)` returns a class we cannot see into: no guess.
    code = metric_case("NoNan = suppress_nan_check(MeanMetric)\navg = NoNan().to(device)", "avg.update(loss)")
    assert found(code) == set()


@pytest.mark.parametrize(
    "setup",
    [
        "import torchmetrics as tm\navg = tm.MeanMetric().to(device)",
        "import torchmetrics\navg = torchmetrics.aggregation.MeanMetric().cuda()",
        "from torchmetrics.aggregation import MeanMetric as MM\navg = MM().to(device)",
        "avg = MeanMetric()\navg.to(device)",  # moved in place (a metric is an nn.Module)
        "class Loss(MeanMetric):\n    pass\n\navg = Loss().to(device)",
        "avg = [MeanMetric().to(device)][0]",
    ],
)
def test_aliases_and_moves(setup):
    code = metric_case(setup, "avg.update(loss)")
    assert (line_of(code, "avg.update(loss)"), "TSL201") in found(code)


def test_metric_never_moved_stays_on_cpu():
    code = metric_case("import time\navg = MeanMetric()\nacc = MulticlassAccuracy(4)", "avg.update(time.perf_counter())\nacc.update(logits.cpu(), y.cpu())")
    assert found(code) == set()


def test_module_attributes_move_with_the_module():
    code = METRIC_PRELUDE + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 4)
                self.train_loss = MeanMetric()
                self.metrics = MetricCollection({"f1": MulticlassF1Score(4)})

            def forward(self, x):
                return self.fc(x)

        net = Net().to(device)
        """
    ) + LOOP.replace("model(x)", "net(x)") + "    net.train_loss.update(loss)\n    net.metrics.update(logits, y)\n"
    assert found(code) == {(line_of(code, "net.train_loss.update"), "TSL201"), (line_of(code, "net.metrics.update"), "TSL206")}
    unmoved = code.replace("net = Net().to(device)", "net = Net()")
    assert found(unmoved) == set()


def test_lightning_module_attribute_in_training_step():
    code = textwrap.dedent(
        """\
        import lightning as L
        import torch
        from torchmetrics.classification import MulticlassAccuracy

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.acc = MulticlassAccuracy(num_classes=5)
                self.step_time = MeanMetric()

            def training_step(self, batch, batch_idx):
                x, y = batch
                logits = self(x)
                self.acc(logits, y)
                self.log("acc", self.acc, on_epoch=True)
                return torch.nn.functional.cross_entropy(logits, y)
        """
    )
    assert found(code) == {(line_of(code, "self.acc(logits, y)"), "TSL206")}


@pytest.mark.parametrize(
    "setup",
    [
        "avg = MeanMetric(nan_strategy=args.nan_strategy).to(device)",
        "avg = MeanMetric(**metric_kwargs).to(device)",
        'avg = MeanMetric(nan_strategy="disable").to(device)',
        "class Fast(MeanMetric):\n    def update(self, value):\n        self.mean_value += value\n\navg = Fast().to(device)",
    ],
)
def test_user_configured_or_disabled_nan_strategy_is_silent(setup):
    assert found(metric_case(setup, "avg.update(loss)")) == set()


def test_class_defaults_read_from_torchmetrics_source():
    code = "import torchmetrics as tm\nfrom torchmetrics.classification import MulticlassAccuracy\n" "a = tm.MeanMetric()\nb = MulticlassAccuracy(5)\nc = tm.Accuracy(task='multiclass', num_classes=5)\nd = tm.aggregation.CatMetric(0.0)\n"

    from torchsync_lint.analysis import ModuleAnalysis

    module = cst.parse_module(code)
    analysis = ModuleAnalysis(module, code)
    tracker = metrics_analysis.metric_tracker(analysis)
    by_class = {site.cls.name: site for site in tracker.sites.values()}
    assert by_class["MeanMetric"].setting("nan_strategy") == "warn"
    assert by_class["MulticlassAccuracy"].setting("average") == "macro"
    assert by_class["Accuracy"].setting("average") == "micro" and by_class["Accuracy"].task == "multiclass"
    assert by_class["CatMetric"].setting("nan_strategy") == 0.0  # positional float: replace NaNs
    assert all(tracker.device_of(s) == "cpu" for s in tracker.sites.values())


def test_class_defaults_match_installed_torchmetrics():
    tm = pytest.importorskip("torchmetrics")
    import inspect

    for name, cls in metric_classes.KNOWN_CLASSES.items():
        if cls.family in ("collection", "custom"):
            continue
        real = getattr(tm, name, None) or getattr(tm.classification, name)
        sig = inspect.signature(real.__new__ if "task" in cls.params else real.__init__)
        params = [p for p in sig.parameters if p not in ("self", "cls", "kwargs")]
        assert list(cls.params) == params[: len(cls.params)], name
        for key, default in cls.defaults:
            if key in sig.parameters:
                assert sig.parameters[key].default == default, (name, key)


# -- near misses -----------------------------------------------------------------------------

def test_gated_compute_and_once_after_loop_are_not_tsl204():
    code = metric_case("acc = MulticlassAccuracy(4, average='micro').to(device)", "acc.update(logits, y)\nif step % 50 == 0:\n    v = acc.compute()", after="final = acc.compute()\n")
    assert found(code) == set()


def test_micro_and_deterministic_avoid_tsl206():
    micro = metric_case("acc = MulticlassAccuracy(4, average='micro').to(device)", "acc.update(logits, y)")
    det = metric_case("torch.use_deterministic_algorithms(True)\nacc = MulticlassAccuracy(4).to(device)", "acc.update(logits, y)")
    topk = metric_case("acc = MulticlassAccuracy(4, top_k=2).to(device)", "acc.update(logits, y)")
    assert found(micro) == found(det) == found(topk) == set()


def test_cpu_tensor_value_has_no_device_nan_check():
    # The post's step 5 variant: a CPU scalar tensor checked on the host.
    code = metric_case("import time\navg = MeanMetric().to(device)", "t = torch.as_tensor(time.perf_counter())\navg.update(t)")
    assert "TSL201" not in {c for _, c in found(code)}


def test_tsl205_needs_nccl_cpu_and_compute():
    nccl = 'import torch.distributed as dist\ndist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")\n'
    code = metric_case(nccl + "avg = MeanMetric()", "avg.update(1.0)", after="print(avg.compute())\n")
    assert found(code) == {(line_of(code, "avg = MeanMetric()"), "TSL205")}
    never_computed = metric_case(nccl + "avg = MeanMetric()", "avg.update(1.0)")
    default_backend = metric_case("import torch.distributed as dist\ndist.init_process_group()\navg = MeanMetric()", "avg.update(1.0)", after="avg.compute()\n")
    assert found(never_computed) == found(default_backend) == set()


# -- TSL203 version logic --------------------------------------------------------------------

WEIGHTLESS = metric_case("avg = MeanMetric(nan_strategy='disable').to(device)", "avg.update(loss)")


def test_tsl203_configured_version(monkeypatch):
    monkeypatch.setattr(metric_classes, "installed_torchmetrics_version", lambda: "1.9.0")
    assert found(WEIGHTLESS, {"torchmetrics-version": "1.6.1"}) == {(line_of(WEIGHTLESS, "avg.update(loss)"), "TSL203")}
    assert found(WEIGHTLESS, {"torchmetrics-version": "1.6.2"}) == set()
    assert found(WEIGHTLESS, {"torchmetrics-version": "2.0"}) == set()
    assert found(WEIGHTLESS) == set()  # falls back to the installed 1.9.0


def test_tsl203_installed_version_fallback_and_off(monkeypatch):
    monkeypatch.setattr(metric_classes, "installed_torchmetrics_version", lambda: "1.5.2")
    findings = lint(WEIGHTLESS, {"torchmetrics-version": None})
    assert [(f.code, "1.5.2 (installed)" in f.message) for f in findings] == [("TSL203", True)]
    monkeypatch.setattr(metric_classes, "installed_torchmetrics_version", lambda: None)
    assert found(WEIGHTLESS) == set()  # unknown version: the rule is off


def test_installed_version_is_read_without_importing_torch():
    script = (
        "import sys\nfrom torchsync_lint.analysis.metric_classes import installed_torchmetrics_version\n"
        "from torchsync_lint.engine import lint_source\n"
        f"lint_source({WEIGHTLESS!r}, 't.py', None, {{}})\n"
        "print(installed_torchmetrics_version())\n"
        "assert 'torch' not in sys.modules and 'torchmetrics' not in sys.modules, 'imported torch'\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("1.")


@pytest.mark.parametrize("distribution", ["torchmetrics", "libcst", "no-such-distribution-here"])
def test_the_version_from_the_dist_info_name_is_what_importlib_metadata_reads(distribution):
    """The fast path (a folder name beside the package) and importlib.metadata (36 ms to import,
    on every run's start-up before) agree, and a missing distribution is None either way."""
    from importlib import metadata

    from torchsync_lint import installed

    try:
        expected = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        expected = None
    assert installed._dist_info_version(distribution) == expected
    installed.installed_version.cache_clear()
    assert installed.installed_version(distribution) == expected


def test_tsl203_version_from_pyproject(tmp_path, monkeypatch):
    monkeypatch.setattr(metric_classes, "installed_torchmetrics_version", lambda: "1.9.0")
    (tmp_path / "pyproject.toml").write_text('[tool.torchsync-lint]\ntorchmetrics-version = "1.4.0"\n')
    script = tmp_path / "train.py"
    script.write_text(WEIGHTLESS)
    config = api.config_for([str(script)])
    results = api.lint_paths([str(script)], config)
    assert [(f.line, f.code) for r in results for f in r.findings if f.code == "TSL203"] == [(line_of(WEIGHTLESS, "avg.update(loss)"), "TSL203")]


def test_tsl201_on_old_torchmetrics_has_no_disable_fix():
    code = metric_case("avg = MeanMetric().to(device)", "avg.update(loss)")
    old = [f for f in lint(code, {"torchmetrics-version": "1.6.1"}) if f.code == "TSL201"]
    assert old and old[0].fix is None and ">= 1.6.2" in old[0].message


# -- fixes -----------------------------------------------------------------------------------

def test_tsl201_fix_disables_the_check_and_parses():
    code = metric_case('metrics = {"loss": MeanMetric(), "acc": MulticlassAccuracy(4, average="micro")}\nmetrics = {k: m.to(device) for k, m in metrics.items()}', 'metrics["loss"].update(loss)')
    new = fixed(code, "TSL201", {"torchmetrics-version": "1.9.0"})
    ast.parse(new)
    assert '"loss": MeanMetric(nan_strategy="disable")' in new
    assert found(new, {"torchmetrics-version": "1.9.0"}) == set()


def test_tsl201_fix_replaces_an_explicit_strategy_and_skips_weighted_metrics():
    code = metric_case('avg = MeanMetric("warn").to(device)', "avg.update(loss)")
    new = fixed(code, "TSL201", {"torchmetrics-version": "1.9.0"})
    assert 'avg = MeanMetric("disable").to(device)' in new  # positional stays positional
    multiline = metric_case("avg = MeanMetric(\n    sync_on_compute=False,\n).to(device)", "avg.update(loss)")
    new = fixed(multiline, "TSL201", {"torchmetrics-version": "1.9.0"})
    assert 'avg = MeanMetric(\n    sync_on_compute=False,\n    nan_strategy="disable",\n).to(device)' in new
    ast.parse(new)
    weighted = metric_case("avg = MeanMetric().to(device)", "avg.update(loss, y.float())")
    assert all(f.fix is None for f in lint(weighted, {"torchmetrics-version": "1.9.0"}) if f.code == "TSL201")


def test_tsl202_fix_builds_the_tensor_on_the_metric_device():
    code = metric_case("import time\nstep_time = SumMetric(nan_strategy='disable').to(device)", "t0 = time.perf_counter()\nstep_time.update(time.perf_counter() - t0)")
    new = fixed(code, "TSL202")
    ast.parse(new)
    assert "step_time.update(torch.full((), time.perf_counter() - t0, dtype=step_time.dtype, device=step_time.device))" in new
    assert found(new) == set()


_T202_ATTR = "class Trainer:\n    def __init__(self):\n        self.avg = MeanMetric().to(device)\n\ntrainer = Trainer()"
_T202_COLLECTION = 'metrics = MetricCollection({"loss": MeanMetric(), "total": SumMetric()}).to(device)'


@pytest.mark.parametrize(
    ("setup", "before", "after"),
    [
        ("total = SumMetric().cuda()", "total.update(loss.item())", "total.update(loss.detach())"),
        (_T202_ATTR, "trainer.avg.update(loss.item())", "trainer.avg.update(loss.detach())"),  # an attribute receiver
        (_T202_COLLECTION, "metrics.update(loss.item())", "metrics.update(loss.detach())"),  # a collection (no `.dtype`)
        ('metrics = {"loss": MeanMetric().to(device)}', 'metrics["loss"].update(value=loss.item())', 'metrics["loss"].update(value=loss.detach())'),
        ("avg = MeanMetric().to(device)", "avg.update(float(loss))", "avg.update(loss.detach())"),
        ("avg = MeanMetric().to(device)", "avg.update((loss * 2).item())", "avg.update((loss * 2).detach())"),
    ],
)
def test_tsl202_passes_the_tensor_read_by_item(setup, before, after):
    """`m.update(loss.item())`: the fix ends the read too (TSL101 is gone), where
    `torch.full((), loss.item(), ...)` kept it."""
    code = metric_case(setup, before)
    (finding,) = [f for f in lint(code) if f.code == "TSL202"]
    assert finding.fix.applicability is Applicability.SAFE and "pass the tensor" in finding.message
    new = fixed(code, "TSL202")
    assert new == metric_case(setup, after)
    assert {f.code for f in lint_source(new, "t.py", {"TSL101", "TSL202"})} == set()


@pytest.mark.parametrize(
    ("setup", "before", "after"),
    [
        ("avg = MeanMetric().to(device)", "avg.update(0.5)", "avg.update(torch.full((), 0.5, dtype=avg.dtype, device=avg.device))"),
        ("avg = MeanMetric().to(device)", "avg.update(int(loss))", "avg.update(torch.full((), int(loss), dtype=avg.dtype, device=avg.device))"),  # truncates
        ("avg = MeanMetric().to(device)\nhost = torch.zeros(())", "avg.update(host.item())", "avg.update(torch.full((), host.item(), dtype=avg.dtype, device=avg.device))"),  # a CPU tensor
    ],
)
def test_tsl202_other_numbers_keep_the_torch_full_fix(setup, before, after):
    assert fixed(metric_case(setup, before), "TSL202") == metric_case(setup, after)


def test_tsl202_detach_is_unsafe_with_a_float_nan_strategy():
    code = metric_case("avg = MeanMetric(nan_strategy=0.0).to(device)", "avg.update(loss.item())")
    (finding,) = [f for f in lint(code) if f.code == "TSL202"]
    assert finding.fix.applicability is Applicability.UNSAFE
    near = metric_case("avg = MeanMetric(nan_strategy='ignore').to(device)", "avg.update(loss.item())")
    assert [f.fix.applicability for f in lint(near) if f.code == "TSL202"] == [Applicability.SAFE]


def test_tsl202_no_fix_for_values_that_may_be_arrays():
    code = metric_case("import numpy as np\navg = MeanMetric(nan_strategy='disable').to(device)", "avg.update(np.mean(np.ones(3)))")
    findings = [f for f in lint(code) if f.code == "TSL202"]
    assert findings and findings[0].fix is None


def test_tsl203_fix_passes_ones_like_and_parses():
    code = metric_case('metrics = {"avg_loss": MeanMetric(nan_strategy="disable")}\nmetrics = {n: m.to(device) for n, m in metrics.items()}', 'metrics["avg_loss"].update(loss)')
    settings = {"torchmetrics-version": "1.6.1"}
    new = fixed(code, "TSL203", settings)
    ast.parse(new)
    assert 'metrics["avg_loss"].update(loss, weight=torch.ones_like(loss))' in new
    assert found(new, settings) == set()


# -- metrics passed as parameters ------------------------------------------------------------

STEP_FN = textwrap.dedent(
    """\
    def train_step(x, y, metric):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metric.update(loss)

    """
)


def _step_loop(setup: str, calls: str, after: str = "") -> str:
    body = "".join(f"    {line}\n" for line in calls.splitlines())
    return METRIC_PRELUDE + STEP_FN + setup + "\nfor x, y in loader:\n    x, y = x.to(device), y.to(device)\n" + body + after


@pytest.mark.parametrize(
    ("setup", "calls", "reported"),
    [
        ("avg = MeanMetric().to(device)", "train_step(x, y, avg)", True),
        ("avg = MeanMetric().to(device)", "train_step(x, y, metric=avg)", True),
        ("avg = MeanMetric()\navg.cuda()", "train_step(y=y, x=x, metric=avg)", True),
        ("a = MeanMetric().to(device)\nb = MeanMetric().to(device)", "train_step(x, y, a)\ntrain_step(x, y, b)", True),  # one kind
        ("avg = MeanMetric()", "train_step(x, y, avg)", False),  # on the CPU
        ("avg = MeanMetric(nan_strategy='disable').to(device)", "train_step(x, y, avg)", False),
        ("avg = MeanMetric().to(device)", "train_step(x, y, avg)\ntrain_step(x, y, meter)", False),  # something else
        ("avg = MeanMetric().to(device)", "train_step(x, y, avg)\ntrain_step(x, y, None)", False),
        ("avg = MeanMetric().to(device)\ntot = SumMetric().to(device)", "train_step(x, y, avg)\ntrain_step(x, y, tot)", False),  # two classes
        ("a = MeanMetric().to(device)\nb = MeanMetric(nan_strategy='ignore').to(device)", "train_step(x, y, a)\ntrain_step(x, y, b)", False),  # two configs
        ("a = MeanMetric().to(device)\nb = MeanMetric()", "train_step(x, y, a)\ntrain_step(x, y, b)", False),  # two devices
        ("avg = MeanMetric().to(device)", "train_step(*batch, avg)", False),
        # `**kw` whose keys the code shows passes `metric` by keyword (index.spread_keywords)
        ("avg = MeanMetric().to(device)\nkw = {'metric': avg}", "train_step(x, y, **kw)", True),
        ("avg = MeanMetric().to(device)", "train_step(x, y, **{'metric': avg})", True),
        ("avg = MeanMetric().to(device)", "train_step(x, y, **dict(metric=avg))", True),
        # ...but not when the dict is stored into, or its keys are not literal
        ("avg = MeanMetric().to(device)\nkw = {'metric': avg}\nkw['metric'] = other", "train_step(x, y, **kw)", False),
        ("avg = MeanMetric().to(device)\nkey = 'metric'\nkw = {key: avg}", "train_step(x, y, **kw)", False),
        ("avg = MeanMetric().to(device)\nfrom functools import partial\nstep = partial(train_step, metric=avg)", "train_step(x, y, avg)", False),  # escapes
        ("avg = MeanMetric().to(device)\nsteps = [train_step]", "train_step(x, y, avg)", False),
        ("avg = MeanMetric().to(device)", "pass", False),  # never called
    ],
)
def test_metric_parameter_needs_every_call_site_to_agree(setup, calls, reported):
    code = _step_loop(setup, calls)
    assert ((line_of(code, "metric.update(loss)"), "TSL201") in found(code)) is reported


def test_metric_parameter_default_is_a_call_site_value():
    with_default = _step_loop("", "train_step(x, y)").replace("def train_step(x, y, metric):", "avg = MeanMetric().to(device)\n\ndef train_step(x, y, metric=avg):", 1)
    assert found(with_default) == {(line_of(with_default, "metric.update(loss)"), "TSL201")}
    none_default = _step_loop("avg = MeanMetric().to(device)", "train_step(x, y)\ntrain_step(x, y, avg)").replace("y, metric):", "y, metric=None):", 1)
    assert found(none_default) == set()


def test_metric_parameter_through_recursion_terminates():
    recursive = METRIC_PRELUDE + textwrap.dedent(
        """\
        def step(x, y, metric, depth):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            metric.update(loss)
            if depth:
                step(x, y, metric, depth - 1)

        def ping(metric, n):
            pong(metric, n)

        def pong(m, n):
            m.update(torch.ones((), device=device))
            if n:
                ping(m, n - 1)

        avg = MeanMetric().to(device)
        for x, y in loader:
            step(x.to(device), y.to(device), avg, 2)
            ping(avg, 3)
        """
    )
    assert found(recursive) == {(line_of(recursive, "metric.update(loss)"), "TSL201"), (line_of(recursive, "m.update(torch.ones("), "TSL201")}
    # The cycle also reaches `pong` from elsewhere with an unknown value: both ends are unknown.
    mixed = recursive.replace("    ping(avg, 3)\n", "    ping(avg, 3)\n    pong(meter, 1)\n")
    assert found(mixed) == {(line_of(mixed, "metric.update(loss)"), "TSL201")}


def test_metric_parameter_of_methods():
    code = METRIC_PRELUDE + textwrap.dedent(
        """\
        class Trainer:
            def train_step(self, x, y, metric):
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                metric.update(loss)

            @staticmethod
            def record(metric, value):
                metric.update(value)

            def fit(self, loader, metric):
                for x, y in loader:
                    self.train_step(x.to(device), y.to(device), metric)
                    Trainer.record(metric, torch.zeros((), device=device))

        Trainer().fit(loader, MeanMetric().to(device))
        """
    )
    assert found(code) == {(line_of(code, "metric.update(loss)"), "TSL201"), (line_of(code, "metric.update(value)"), "TSL201")}
    # A local subclass that overrides the method may call it through super() with arguments we
    # do not follow: callers we cannot see.
    overridden = code + "\nclass Resumed(Trainer):\n    def train_step(self, x, y, metric):\n        super().train_step(x, y, metric)\n"
    assert (line_of(overridden, "metric.update(loss)"), "TSL201") not in found(overridden)
    # One that inherits it as it is runs it only where its instances are used: call sites we see
    # (and `Resumed().fit(loader, cpu_metric)` there would disagree: unknown).
    inherited = code + "\nclass Resumed(Trainer):\n    pass\n"
    assert found(inherited) == found(code)
    disagreeing = inherited + "\nResumed().fit(loader, MeanMetric())\n"
    assert (line_of(disagreeing, "metric.update(loss)"), "TSL201") not in found(disagreeing)
    # A decorator that is not torch's may call the function with anything.
    registered = code.replace("    def train_step(", "    @registry.register\n    def train_step(")
    assert (line_of(registered, "metric.update(loss)"), "TSL201") not in found(registered)


def test_metric_parameter_of_init_is_an_attribute_of_a_moved_module():
    code = METRIC_PRELUDE + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self, loss_metric):
                super().__init__()
                self.fc = torch.nn.Linear(8, 4)
                self.loss_metric = loss_metric

            def forward(self, x):
                return self.fc(x)

        net = Net(MeanMetric()).to(device)
        for x, y in loader:
            loss = F.cross_entropy(net(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            net.loss_metric.update(loss)
        """
    )
    assert found(code) == {(line_of(code, "net.loss_metric.update(loss)"), "TSL201")}
    # A class used as a value may be instantiated with anything, where we cannot see it.
    factory = code.replace("net = Net(MeanMetric()).to(device)", "make = Net\nnet = Net(MeanMetric()).to(device)")
    assert found(factory) == set()


def test_metric_parameter_moved_inside_the_function():
    code = METRIC_PRELUDE + textwrap.dedent(
        """\
        def train(loader, metric):
            metric = metric.to(device)
            for x, y in loader:
                loss = F.cross_entropy(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
                metric.update(loss)

        train(loader, MeanMetric())
        """
    )
    assert found(code) == {(line_of(code, "metric.update(loss)"), "TSL201")}


def test_lambda_parameter_is_not_the_outer_metric():
    code = metric_case("avg = MeanMetric()\nto_device = lambda avg: avg.to(device)\nupdate = lambda m, v: m.update(v)", "avg.update(loss)\nupdate(avg, loss)")
    assert found(code) == set()  # `avg` stays on the CPU; lambdas are not followed


@pytest.mark.parametrize(("depth", "reported"), [(3, True), (600, False)])
def test_metric_parameter_through_a_call_chain_gives_up_when_too_deep(depth, reported):
    chain = "".join(f"def f{i}(m, x):\n    f{i + 1}(m, x)\n\n" for i in range(depth))
    code = metric_case(chain + f"def f{depth}(m, x):\n    m.update(x)\n\navg = MeanMetric().to(device)", "f0(avg, loss)")
    errors = [f.message for f in lint_source(code, "t.py", {"TSL201"}, {}) if f.code == "TSL903"]
    assert errors == []  # no RecursionError, whatever the depth
    assert ((line_of(code, "m.update(x)"), "TSL201") in found(code)) is reported


def test_metric_parameter_of_implicitly_called_methods_is_unknown():
    # `net(x, m)` calls `forward` where we do not see it: its visible call site is not all of them.
    code = METRIC_PRELUDE + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 4)

            def forward(self, x, metric):
                out = self.fc(x)
                metric.update(out.sum())
                return out

        net = Net().to(device)
        for x, y in loader:
            out = net.forward(x.to(device), MeanMetric().to(device))
            out = net(x.to(device), MeanMetric(nan_strategy="disable").to(device))
            out.sum().backward()
            optimizer.step()
        """
    )
    assert found(code) == set()


def test_messages_do_not_depend_on_hash_randomisation():
    # A use that reaches several metrics names the first one in source order, whatever
    # PYTHONHASHSEED is (sets of keys used to pick one at random).
    code = SEED_LOOP.replace('num_classes=4, average="macro"', 'num_classes=4, average="weighted"')
    code = code.replace('Recall(task="multiclass", num_classes=4)', 'Recall(task="multiclass", num_classes=4, average="macro")')
    script = "from torchsync_lint.engine import lint_source\nprint([f.message for f in lint_source(%r, 't.py', {'TSL206'}, {})])\n" % code
    outputs = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": str(seed)}
        outputs.add(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, check=True).stdout)
    assert len(outputs) == 1 and "`Precision`" in outputs.pop()


@pytest.mark.parametrize(
    "make, found_it",
    [
        ("Trainer(MeanMetric().to(device))", True),  # the base class's __init__ stores it
        ("Trainer(metric=MeanMetric().to(device))", True),
        ("Trainer(MeanMetric())", False),  # on the CPU: no device NaN check
    ],
)
def test_a_metric_a_base_class_stores_is_tracked_in_the_subclass(make, found_it):
    code = METRIC_PRELUDE + textwrap.dedent(
        f"""\
        class BaseTrainer:
            def __init__(self, metric):
                self.metric = metric


        class Trainer(BaseTrainer):
            def step(self, x, y):
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                self.metric.update(loss)


        trainer = {make}
        for x, y in loader:
            trainer.step(x.to(device), y.to(device))
        """
    )
    assert ((line_of(code, "self.metric.update(loss)"), "TSL201") in found(code)) is found_it
