"""A value carried around a loop through another module's function (`step = train_step(...,
step)`): the project view takes the least fixed point, so the value is what the loop starts
from joined with what the function makes of it, never the depth limit's guess. A host counter
stays a host counter (no TSL102 on `if step % N == 0`, no TSL101 on `counter.item()` of a numpy
array); a device accumulator stays on the device (its `.item()` is a read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_file, lint_paths
from torchsync_lint.config import Config

HELPERS = '''\
import torch
import torch.nn.functional as F


def train_step(model, optimizer, x, y, step):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if step % 10 == 0:
        print("step", step)
    return step


def train_step_pair(model, optimizer, x, y, step):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach(), step + 1


def accumulate(total, model, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return total + loss.detach()
'''

MAIN = '''\
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from helpers import accumulate, train_step, train_step_pair

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,))), batch_size=8, num_workers=2, pin_memory=True)
{body}
'''

FOR_LOOP = '''\
step = 0
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    step = train_step(model, optimizer, x, y, step)
    {use}
'''

WHILE_LOOP = '''\
step = 0
it = iter(loader)
while step < 100:
    x, y = next(it)
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    step = train_step(model, optimizer, x, y, step)
    {use}
'''

TUPLE_RESULT = '''\
step = 0
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss, step = train_step_pair(model, optimizer, x, y, step)
    {use}
'''


def _lint(tmp_path: Path, body: str) -> dict[str, list[tuple[int, str]]]:
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(MAIN.format(body=body))
    found = {Path(r.path).name: [(f.line, f.code) for f in r.findings] for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    for name in ("helpers.py", "train.py"):  # a one-file run answers the same
        assert [(f.line, f.code) for f in lint_file(str(tmp_path / name), Config()).findings] == found[name]
    return found


@pytest.mark.parametrize("loop", [FOR_LOOP, WHILE_LOOP, TUPLE_RESULT])
def test_host_counter_carried_through_a_helper_stays_host(tmp_path, loop):
    found = _lint(tmp_path, loop.format(use="if step % 10 == 0:\n        print(step)"))
    assert found["helpers.py"] == []  # `if step % 10 == 0:` in the helper: a Python int
    assert found["train.py"] == []


def test_numpy_counter_carried_through_a_helper_is_no_device_read(tmp_path):
    body = FOR_LOOP.replace("step = 0", "step = np.zeros(1)").format(use="print(step.item())")
    assert _lint(tmp_path, body)["train.py"] == []


@pytest.mark.parametrize("start", ["torch.zeros((), device=device)", "torch.zeros(()).to(device)"])
def test_device_accumulator_carried_through_a_helper_is_read(tmp_path, start):
    body = f'''\
total = {start}
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    total = accumulate(total, model, x, y)
    print(total.item())
'''
    found = _lint(tmp_path, body)["train.py"]
    line = MAIN.format(body=body).splitlines().index("    print(total.item())") + 1
    assert (line, "TSL101") in found


def test_tuple_element_of_a_device_value_is_read(tmp_path):
    body = TUPLE_RESULT.format(use="print(loss.item())")
    found = _lint(tmp_path, body)["train.py"]
    line = MAIN.format(body=body).splitlines().index("    print(loss.item())") + 1
    assert found == [(line, "TSL101")]
