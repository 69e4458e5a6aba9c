"""A small training project for the language-server tests: `train.py` calls a helper in
`helpers.py` every step (its `.item()` is a TSL101 reported in helpers.py, because of
train.py), builds a loader without pinning or workers (TSL302 safe fix, TSL303 unsafe fix) and
copies batches with a blocking `.to()` (TSL301 safe fix); `other.py` is connected to nothing."""

from __future__ import annotations

from pathlib import Path

PYPROJECT = '[project]\nname = "demo"\n\n[tool.torchsync-lint]\n'

HELPERS = """\
def log_loss(loss):
    return loss.item()
"""

HELPERS_CLEAN = """\
def log_loss(loss):
    return loss.detach()
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from helpers import log_loss


def main(dataset):
    device = torch.device("cuda")
    model = torch.nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=32)
    for step, (x, y) in enumerate(loader):
        x = x.to(device)
        y = y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log_loss(loss)
"""

OTHER = """\
import torch


def unrelated(x):
    return torch.zeros(3) + x
"""


def make_project(root: Path, pyproject: str = PYPROJECT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject)
    (root / "helpers.py").write_text(HELPERS)
    (root / "train.py").write_text(TRAIN)
    (root / "other.py").write_text(OTHER)
    return root


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line containing ``needle``."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)
