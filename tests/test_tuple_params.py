"""Two value-model rules for objects handed between modules:

- a parameter that every caller binds to a tuple of known shape has its elements, position by
  position (`targets[0]`, `names, x = batch`, `batch[0][0]`), not "an element of a container of
  device tensors": a name string beside the device tensors formats as a string;
- `self.rpn.forward(x)` runs this module's `forward` only when `self.rpn` is an instance of this
  module's class: every torch module has a `forward`, so "the one class here defining it" says
  nothing about a module built from another module's class.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_file, lint_paths
from torchsync_lint.config import Config

TOOLS = '''\
import torch


def to_device(data, device):
    ids, names, x, y = data
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)
    return (ids, names, x, y)


def describe(targets, loss):
    {use}
'''

TRAIN = '''\
import torch
from torch.utils.data import DataLoader

from tools import describe, to_device

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)
for batch in loader:
    batch = to_device(batch, device)
    loss = torch.nn.functional.cross_entropy(model(batch[2]), batch[3])
    loss.backward()
    optimizer.step()
    describe(batch, loss)
'''


def _lint(tmp_path: Path, files: dict[str, str]) -> dict[str, list[tuple[int, str]]]:
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = {Path(r.path).name: [(f.line, f.code) for f in r.findings] for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    for name in files:
        assert [(f.line, f.code) for f in lint_file(str(tmp_path / name), Config()).findings] == found[name]
    return found


@pytest.mark.parametrize(
    "use",
    [
        'print("sample {}".format(targets[1]))',  # a subscript
        'names = targets[1]\n    print(f"sample {names}")',  # through a name
        'ids, names, x, y = targets\n    print("sample %s" % names)',  # unpacking
        'print("first {}".format(targets[1][0]))',  # a subscript of the element
    ],
)
def test_a_string_element_of_a_passed_tuple_is_no_tensor(tmp_path, use):
    assert _lint(tmp_path, {"tools.py": TOOLS.format(use=use), "train.py": TRAIN})["tools.py"] == []


@pytest.mark.parametrize(
    "use",
    [
        'print("x {}".format(targets[2]))',
        'x = targets[2]\n    print(f"x {x}")',
        'ids, names, x, y = targets\n    print("x %s" % x)',
    ],
)
def test_a_device_element_of_a_passed_tuple_is_a_tensor(tmp_path, use):
    found = _lint(tmp_path, {"tools.py": TOOLS.format(use=use), "train.py": TRAIN})["tools.py"]
    assert [code for _, code in found] == ["TSL103"]


PARTS = '''\
import torch


class RegionProposal(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Linear(8, 8)

    def forward(self, x, scale):
        return self.conv(x) * scale
'''

DETECTOR = '''\
import torch

from parts import RegionProposal


class Local(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rpn = RegionProposal()
        self.local = Local()

    def forward(self, x, scale=1.0, mode="forward"):
        if mode == "forward":
            feats = self.rpn.forward(x, scale)
            return self.local.forward(feats)
        return x


device = torch.device("cuda")
model = Detector().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    out = model(torch.randn(4, 8, device=device))
    out.sum().backward()
    optimizer.step()
'''


def test_forward_of_another_modules_instance_is_not_this_modules_forward(tmp_path):
    # `self.rpn.forward(x, scale)` used to bind `x, scale` to Detector.forward's `x, scale`, and
    # `mode` took the device values of other call sites: `mode == "forward"` was a TSL102
    found = _lint(tmp_path, {"parts.py": PARTS, "detector.py": DETECTOR})
    assert found["detector.py"] == []


def test_forward_of_this_modules_instance_is_followed(tmp_path):
    # `self.local.forward(feats)`: an instance of this module's class, whose forward reads
    text = DETECTOR.replace("        return self.fc(x)", "        print(x.sum().item())\n        return self.fc(x)")
    found = _lint(tmp_path, {"parts.py": PARTS, "detector.py": text})["detector.py"]
    assert [code for _, code in found] == ["TSL101"]
