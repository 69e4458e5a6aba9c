"""Method dispatch within a module (analysis/dispatch.py): a base trainer's loop calling
`self.train_step(...)` reaches the subclass's override; a subclass without `__init__` is
constructed by its base's; `**` arguments whose keys the code shows bind parameters."""

from __future__ import annotations

import textwrap

import pytest

from torchsync_lint.engine import lint_source


def found(code: str) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint_source(code, "t.py", {"TSL101"}, {})}


def line_of(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)

HEAD = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda")
"""

BASE = HEAD + """\
class Base:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
    def fit(self):
        for x in self.loader:
            self.train_step(x)
    def train_step(self, x):
{stub}
class Trainer(Base):
    def train_step(self, x):
        loss = self.model(x.to(device, non_blocking=True)).sum()
        loss.backward()
        print(loss.item())
model = torch.nn.Linear(4, 1).to(device)
trainer = Trainer(model, DataLoader(data, num_workers=2, pin_memory=True))
trainer.fit()
"""


@pytest.mark.parametrize(
    "stub",
    ["        raise NotImplementedError", "        raise NotImplementedError()", "        pass", "        ...", '        """Subclasses step."""'],
)
def test_base_loop_reaches_the_subclass_override(stub):
    code = BASE.format(stub=stub)
    assert (line_of(code, "print(loss.item())"), "TSL101") in found(code)


def test_abstractmethod_decorator_is_a_stub():
    code = BASE.format(stub="        return None").replace("    def train_step(self, x):\n        return None", "    @abc.abstractmethod\n    def train_step(self, x):\n        return None")
    code = "import abc\n" + code
    assert (line_of(code, "print(loss.item())"), "TSL101") in found(code)


def test_concrete_base_method_and_override_both_run():
    # `self` may be a Base or a Trainer: the override is a candidate beside the base's own
    code = BASE.format(stub="        return x")
    assert (line_of(code, "print(loss.item())"), "TSL101") in found(code)


def test_valid_unrelated_class_with_the_same_method_name_is_not_reached():
    code = BASE.format(stub="        raise NotImplementedError").replace("class Trainer(Base):", "class Trainer:")
    code = code.replace("trainer = Trainer(model,", "trainer = Base(model,")
    assert (line_of(code, "print(loss.item())"), "TSL101") not in found(code)


SPREAD = HEAD + """\
def step(model, x):
    loss = model(x).sum()
    loss.backward()
    print(x.sum().item())  # a device tensor only through what the call site binds to `x`
model = torch.nn.Linear(4, 1).to(device)
for x in DataLoader(data, num_workers=2, pin_memory=True):
    x = x.to(device, non_blocking=True)
{call}
"""


@pytest.mark.parametrize(
    "call, reported",
    [
        ('    step(**{"model": model, "x": x})', True),
        ("    step(**dict(model=model, x=x))", True),
        ('    kw = {"model": model, "x": x}\n    step(**kw)', True),
        ("    step(model, x)", True),
        # VALID near-misses: keys the code does not show
        ('    kw = {"model": model}\n    kw["x"] = torch.zeros(2)\n    step(**kw)', False),
        ("    step(**make_kwargs(model, x))", False),
    ],
)
def test_spread_keywords_bind_parameters(call, reported):
    code = SPREAD.format(call=call)
    assert ((line_of(code, "print(x.sum().item())"), "TSL101") in found(code)) is reported
