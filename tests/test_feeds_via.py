"""A loop whose step is another module's function (`step = train_step(model, images, ...)`
with `train_step` in a helper module) feeds the device when that function is step-like: its
loader is GPU-fed (TSL302/TSL303 at the loader) and so are the datasets it reads, wherever their
classes live (TSL304 in the dataset's `__getitem__`). The summary records such a loop with the
functions it calls; the project view keeps it when one of them runs a step."""

from __future__ import annotations

import pytest

from tests.test_objects import project

DATASET = """\
import torch
from torch.utils.data import Dataset


class Images(Dataset):
    def __init__(self, n):
        self.images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i].float() / 255
"""

HELPERS = """\
import torch


def train_step(model, optimizer, images, device):
    loss = model(images.to(device, non_blocking=True)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def count(images):
    return len(images)
"""

MAIN = """\
import torch
from torch.utils.data import DataLoader

from data import Images
from helpers import {name}

device = torch.device("cuda")
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Images(64), batch_size=8)
for images in loader:
    {call}
"""


@pytest.mark.parametrize(
    "name, call",
    [
        ("train_step", "train_step(model, optimizer, images, device)"),
        ("train_step", "loss = train_step(model, optimizer, images=images, device=device)"),
        ("train_step as step_fn", "out = step_fn(model, optimizer, images, device)"),
    ],
    ids=["statement", "keywords", "alias"],
)
def test_a_loop_whose_step_is_another_modules_function_feeds_the_device(tmp_path, capsys, name, call):
    files = {"data.py": DATASET, "helpers.py": HELPERS, "train.py": MAIN.format(name=name, call=call)}
    got = project(tmp_path, files, capsys)
    assert ("train.py", 10, "TSL302") in got and ("train.py", 10, "TSL303") in got
    assert ("data.py", 13, "TSL304") in got  # the dataset of a fed loader, in a third module


def test_a_loop_calling_only_a_helper_that_runs_no_step_feeds_nothing(tmp_path, capsys):
    files = {"data.py": DATASET, "helpers.py": HELPERS, "train.py": MAIN.format(name="count", call="n = count(images)")}
    got = project(tmp_path, files, capsys)
    assert not [k for k in got if k[2] in ("TSL302", "TSL303", "TSL304")]


PROMPTS = """\
from torch.utils.data import Dataset


class Base(Dataset):
    def __init__(self, prompt, n):
        self.prompt, self.n = prompt, n

    def __len__(self):
        return self.n


class Prompts(Base):
    def __getitem__(self, index):
        return {"prompt": self.prompt, "index": index}


class Loaded(Base):
    def __getitem__(self, index):
        return {"prompt": self.prompt.upper(), "index": index}


class Inherits(Prompts):
    pass
"""

LOADER_MAIN = """\
import torch
from torch.utils.data import DataLoader

from prompts import {cls}

model = torch.nn.Linear(4, 1).cuda()
loader = DataLoader({cls}("a", 8), batch_size=2, pin_memory=True)
for batch in loader:
    model(batch["index"].float().cuda(non_blocking=True)).sum().backward()
"""


@pytest.mark.parametrize("cls, flagged", [("Prompts", False), ("Inherits", False), ("Loaded", True)])
def test_a_dataset_class_of_another_module_whose_items_are_in_memory_needs_no_workers(tmp_path, capsys, cls, flagged):
    files = {"prompts.py": PROMPTS, "train.py": LOADER_MAIN.format(cls=cls)}
    got = project(tmp_path, files, capsys, select="TSL303")
    assert (("train.py", 7, "TSL303") in got) is flagged
