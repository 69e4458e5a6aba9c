"""`loader = None` on one path and an object on another (`if cfg.dataset: loader =
get_loader(...)`): where the value is used as an object the None path would have failed, so the
project view takes it for the object. A value that is None on every path stays nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_paths
from torchsync_lint.config import Config

DATA = '''\
from torch.utils.data import DataLoader


def get_loader(dataset):
    return DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)
'''

SOLVER = '''\
import torch


class Solver:
    def __init__(self, loader):
        self.loader = loader
        self.device = torch.device("cuda")
        self.model = torch.nn.Linear(8, 4).to(self.device)

    def train(self):
        data_loader = self.loader
        batches = iter(data_loader)
        for step in range(100):
            x = next(batches)
            x = x.to(self.device)
            self.model(x).sum().backward()
'''

MAIN = '''\
import sys

from data import get_loader
from solver import Solver

{make}
Solver(loader).train()
'''


def _findings(tmp_path: Path, files: dict[str, str], name: str) -> list[tuple[int, str]]:
    """The findings in ``name`` of ``files`` linted as one project."""
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    return [(f.line, f.code) for f in results[name].findings]


def _solver_findings(tmp_path: Path, make: str) -> list[tuple[int, str]]:
    return _findings(tmp_path, {"data.py": DATA, "solver.py": SOLVER, "main.py": MAIN.format(make=make)}, "solver.py")


@pytest.mark.parametrize(
    "make",
    [
        "loader = None\nif sys.argv[1:]:\n    loader = get_loader(sys.argv[1])",
        "loader = get_loader(sys.argv[1]) if sys.argv[1:] else None",
        "if sys.argv[1:]:\n    loader = get_loader(sys.argv[1])\nelse:\n    loader = None",
    ],
)
def test_an_optional_loader_is_the_loader(tmp_path, make):
    assert (15, "TSL301") in _solver_findings(tmp_path, make)


def test_a_loader_that_is_none_everywhere_is_nothing(tmp_path):
    assert _solver_findings(tmp_path, "loader = None") == []


FILLED = '''\
import torch
from torch.utils.data import DataLoader


def get_loaders(dataset):
    loaders = []
    {fill}
    return loaders
'''

USER = '''\
import torch

from data import get_loaders

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
loaders = get_loaders(dataset)
for x in loaders[0]:
    x = x.to(device)
    model(x).sum().backward()
'''


def _user_findings(tmp_path: Path, fill: str) -> list[tuple[int, str]]:
    return _findings(tmp_path, {"data.py": FILLED.format(fill=fill), "train.py": USER}, "train.py")


@pytest.mark.parametrize(
    "fill",
    [
        "loaders.append(DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True))",
        "train = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)\n    loaders.append(train)",
        "for part in (dataset,):\n        loaders.append(DataLoader(part, batch_size=8, num_workers=2, pin_memory=True))",
    ],
)
def test_a_list_filled_by_append_holds_what_is_appended(tmp_path, fill):
    # `loaders = []` then `loaders.append(loader)`: its items are loaders, their batches host tensors
    assert (9, "TSL301") in _user_findings(tmp_path, fill)


def test_a_list_filled_with_device_tensors_holds_device_tensors(tmp_path):
    # its items are device tensors, no loaders: iterating one yields device rows, no copy
    assert _user_findings(tmp_path, 'loaders.append(torch.zeros(8, 8, device="cuda"))').count((9, "TSL301")) == 0
