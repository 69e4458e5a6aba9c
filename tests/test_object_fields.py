"""A value held in an object's field is the value stored there (index.field_defs): `self.x` in
a method, stored by the class or by a base class, and `obj.x` of an object of a class of the
module (`trainer = Trainer(loader, ...)`; `for batch in trainer.loader`). The loader tracker
and the origin of a sink (`self.writer.add_scalar`) follow the store to what the constructor
was given. Each in several syntaxes, with near-misses."""

from __future__ import annotations

import textwrap

import pytest

from torchsync_lint.engine import lint_source


def found(src: str, codes) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint_source(textwrap.dedent(src), "t.py", set(codes), {})}


def line_of(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


LOADER = """\
import torch
from torch.utils.data import DataLoader


class Base:
    def __init__(self, loader, model):
        self.loader = loader
        self.model = model


class Trainer({base}):
{init}
    def step(self, x):
        loss = self.model(x.cuda(non_blocking=True)).sum()
        loss.backward()


model = torch.nn.Linear(4, 1).cuda()
loader = DataLoader(data, batch_size=8)
{make}
{loop}
"""

OWN_INIT = "    def __init__(self, loader, model):\n        self.loader = loader\n        self.model = model\n"


@pytest.mark.parametrize(
    "base, init, make",
    [
        ("object", OWN_INIT, "trainer = Trainer(loader, model)"),
        ("object", OWN_INIT, "trainer = Trainer(model=model, loader=loader)"),
        ("Base", "    pass\n", "trainer = Trainer(loader, model)"),
        ("Base", "    pass\n", 'trainer = Trainer(**{"loader": loader, "model": model})'),
    ],
    ids=["own-init", "keywords", "base-init", "spread"],
)
@pytest.mark.parametrize(
    "loop",
    ["for x in trainer.loader:\n    trainer.step(x)", "for i, x in enumerate(trainer.loader):\n    trainer.step(x)"],
    ids=["for", "enumerate"],
)
def test_a_loader_iterated_through_an_objects_field_feeds_the_gpu(base, init, make, loop):
    src = LOADER.format(base=base, init=init, make=make, loop=loop)
    got = found(src, {"TSL302", "TSL303"})
    assert {(line_of(src, "loader = DataLoader("), "TSL302"), (line_of(src, "loader = DataLoader("), "TSL303")} <= got


def test_a_field_of_another_class_is_not_the_loader():
    src = LOADER.format(base="object", init=OWN_INIT, make="trainer = Trainer(loader, model)\nother = Other()", loop="for x in other.loader:\n    trainer.step(x)")
    src = src.replace("class Base:", "class Other:\n    def __init__(self):\n        self.loader = []\n\n\nclass Base:")
    assert found(src, {"TSL302", "TSL303"}) == set()  # the DataLoader is never iterated


def test_a_name_bound_to_two_classes_is_no_field_of_either():
    src = LOADER.format(base="Base", init="    pass\n", make="trainer = Trainer(loader, model) if fast else Base([], model)", loop="for x in trainer.loader:\n    trainer.step(x)")
    assert found(src, {"TSL302", "TSL303"}) == set()


SINK = """\
import torch
from torch.utils.tensorboard import SummaryWriter


class Base:
    def __init__(self, model, writer):
        self.model = model
        self.writer = writer


class Trainer(Base):
    def step(self, x, i):
        loss = self.model(x).sum()
        loss.backward()
        {log}


model = torch.nn.Linear(4, 1).cuda()
trainer = Trainer(model, {writer})
for i in range(100):
    trainer.step(torch.randn(8, 4, device="cuda"), i)
"""


@pytest.mark.parametrize("log", ['self.writer.add_scalar("loss", loss, i)', 'self.writer.add_scalars("train", {"loss": loss}, i)'])
def test_a_writer_stored_by_a_base_class_is_a_sink(log):
    src = SINK.format(log=log, writer="SummaryWriter()")
    assert (line_of(src, "self.writer.add_scalar"), "TSL106") in found(src, {"TSL106"})


def test_a_writer_field_holding_something_else_is_no_sink():
    src = SINK.format(log='self.writer.add_scalar("loss", loss, i)', writer="MyLogger()")
    assert found(src, {"TSL106"}) == set()
    host = SINK.format(log='self.writer.add_scalar("loss", loss.item(), i)', writer="SummaryWriter()")
    assert (line_of(host, "self.writer.add_scalar"), "TSL106") not in found(host, {"TSL106"})


# -- an instance placed on the way is still an instance of its class ------------------------------
FORWARD = """\
import torch


class DDPM(torch.nn.Module):
    def __init__(self, n_T):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)
        self.n_T = n_T

    def forward(self, x):
        ts = torch.randint(1, self.n_T, (x.shape[0],)).to(x.device)
        return self.net(x).sum() + ts.sum()


class Other(torch.nn.Module):
    def forward(self, x):
        return x.sum()


def train(device="cuda:0"):
{make}
    loader = torch.utils.data.DataLoader(data, num_workers=2, pin_memory=True)
    for x in loader:
        x = x.to(device, non_blocking=True)
        loss = ddpm(x)
        loss.backward()
"""


@pytest.mark.parametrize(
    "make",
    [
        "    ddpm = DDPM(1000)",
        "    ddpm = DDPM(1000).to(device)",
        "    ddpm = DDPM(1000).cuda().train()",
        "    ddpm = DDPM(1000)\n    ddpm.to(device)",
        "    ddpm = DDPM(1000)\n    ddpm.cuda()",
    ],
    ids=["plain", "to", "cuda-train", "move-statement", "cuda-statement"],
)
def test_a_placed_instance_runs_its_classes_forward(make):
    src = FORWARD.format(make=make)
    assert (line_of(src, "ts = torch.randint"), "TSL305") in found(src, {"TSL305"})


def test_an_instance_of_one_of_two_classes_runs_neither_known_forward():
    src = FORWARD.format(make="    ddpm = (DDPM(1000) if fast else Other()).to(device)")
    assert found(src, {"TSL305"}) == set()
