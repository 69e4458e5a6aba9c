"""A call of another module's function through a value (a closure a factory returns, a function
held in a name, one picked from a dict) that returns host values (`{"loss": float(l.item())}`)
gives host values, not the "opaque function of device tensors" guess; one that returns a
device tensor keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_paths
from torchsync_lint.config import Config

FNS = '''\
import torch


def make_train(model, opt):
    def train(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return {RESULT}
    return train


def step(model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return {RESULT}
'''

TRAIN = '''\
import torch
from torch.utils.data import DataLoader

import fns

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{setup}
for x, y in DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    metrics = {call}
    print(", ".join(["%s: %.3f" % (key, metrics[key]) for key in metrics]))
'''

CALLS = {
    "a closure a factory returns": ("train = fns.make_train(model, opt)", "train(x, y)"),
    "a function held in a name": ("step_fn = fns.step", "step_fn(model, opt, x, y)"),
    "a function picked from a dict": ("STEPS = {'plain': fns.step}", "STEPS['plain'](model, opt, x, y)"),
}


def _train_findings(tmp_path: Path, result: str, setup: str, call: str) -> list[str]:
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (tmp_path / "fns.py").write_text(FNS.replace("{RESULT}", result))
    (tmp_path / "train.py").write_text(TRAIN.format(setup=setup, call=call))
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    return [f.code for f in results["train.py"].findings if f.line == 13]


@pytest.mark.parametrize("setup, call", list(CALLS.values()), ids=list(CALLS))
def test_host_results_format_as_numbers(tmp_path, setup, call):
    assert _train_findings(tmp_path, '{"loss": float(loss.item())}', setup, call) == []


@pytest.mark.parametrize("setup, call", list(CALLS.values())[:1], ids=list(CALLS)[:1])
def test_device_results_stay_device(tmp_path, setup, call):
    assert "TSL103" in _train_findings(tmp_path, '{"loss": loss.detach()}', setup, call)
