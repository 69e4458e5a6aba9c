"""A dict of torchmetrics metrics built in one module and handed to another module's step
function is known there key by key (`metrics["loss"].update(loss)`: TSL201 on a device
MeanMetric), and a `compute()` the helper runs under its own step-interval gate is gated for
the view too (no TSL204)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_paths
from torchsync_lint.config import Config

HELPERS = '''\
import torch.nn.functional as F


def train_step(model, optimizer, x, y, metrics, step):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    metrics["loss"].update(loss)
    {compute}
'''

MAIN = '''\
import torch
from torchmetrics import MeanMetric

from helpers import train_step

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
metrics = {metrics}
for step in range(100):
    x = torch.randn(16, 8, device=device)
    y = torch.randint(0, 4, (16,), device=device)
    train_step(model, optimizer, x, y, metrics, step)
'''

ON_DEVICE = '{"loss": MeanMetric().to(device)}'


def _helper_findings(tmp_path: Path, metrics: str, compute: str = "pass") -> list[tuple[int, str]]:
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (tmp_path / "helpers.py").write_text(HELPERS.format(compute=compute))
    (tmp_path / "train.py").write_text(MAIN.format(metrics=metrics))
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    return [(f.line, f.code) for f in results["helpers.py"].findings]


@pytest.mark.parametrize(
    "metrics",
    [ON_DEVICE, '{name: m.to(device) for name, m in {"loss": MeanMetric()}.items()}', 'dict(loss=MeanMetric().to(device))'],
)
def test_a_device_metric_of_a_passed_dict_is_tracked(tmp_path, metrics):
    assert (8, "TSL201") in _helper_findings(tmp_path, metrics)


def test_a_cpu_metric_of_a_passed_dict_is_no_device_check(tmp_path):
    assert (8, "TSL201") not in _helper_findings(tmp_path, '{"loss": MeanMetric()}')


def test_a_compute_under_the_helpers_own_gate_is_gated(tmp_path):
    found = _helper_findings(tmp_path, ON_DEVICE, 'if (step + 1) % 10 == 0:\n        print(metrics["loss"].compute())')
    assert [code for _, code in found if code == "TSL204"] == []


def test_an_ungated_compute_is_reported(tmp_path):
    found = _helper_findings(tmp_path, ON_DEVICE, 'print(metrics["loss"].compute())')
    assert (9, "TSL204") in found
