"""Python values the value model knows are host values: `map(len, labels)` (a host builtin
mapped), `itertools.permutations(range(n), n)` (an iterator of the Python values it is given),
so `torch.as_tensor(list(...), device=self.device)` in a step is a host list copied (TSL305).
VALID near-misses: a factory of classes or callables (`collections.namedtuple`,
`functools.partial`) is not a host value of what it is given: a namedtuple of device losses
still holds device tensors (`scalar(v)` of each still reads one)."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

HEAD = '''import collections
import functools
from itertools import permutations

import torch

LossTuple = collections.namedtuple("LossTuple", ["a", "b"])


def scalar(t):
    return t.item()  # {scalar}


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    labels = ["ab", "abc"]
{body}
    out = model(x)
    out.sum().backward()
    opt.step()
'''


@pytest.mark.parametrize(
    "body",
    [
        "    lengths = torch.as_tensor(list(map(len, labels)), device=x.device)  # flag",
        "    perms = torch.as_tensor(list(permutations(range(3), 3)), device=x.device)  # flag",
        "    lengths = torch.tensor([len(s) for s in labels], device='cuda')  # flag",
    ],
)
def test_python_values_copied_in_the_step(body):
    assert [f for f in marked_findings(HEAD.format(body=body, scalar="clean")) if f[0] == "TSL305"] == [("TSL305", "flag")]


@pytest.mark.parametrize(
    "body",
    [
        "    lengths = torch.as_tensor(list(map(lambda s: s, labels)), device=x.device)  # clean",  # what the function makes: unknown
        "    losses = LossTuple(*[model(x).sum(), model(x).mean()])\n    meters = [scalar(v) for v in losses]",
        "    part = functools.partial(scalar, model(x).sum())\n    value = part()",
    ],
)
def test_valid_factories_are_not_host_values(body):
    found = marked_findings(HEAD.format(body=body, scalar="flag" if "scalar" in body else "clean"))
    assert ("TSL305", "clean") not in found
    if "LossTuple" in body:
        assert ("TSL101", "flag") in found  # the namedtuple's items are the device losses
