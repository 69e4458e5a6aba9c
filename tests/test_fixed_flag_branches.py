"""A branch on `self.<flag>` that every construction fixes turns off is no per-step code: the
flag stored from an `__init__` parameter whose default and every call site say False
(`SineGen(..., flag_for_pulse=False)`), or set to a literal there. VALID near-misses (still
found): a construction passes True, the attribute is written elsewhere, a subclass may set it."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

HEAD = '''import torch
import torch.nn as nn


class SineGen(nn.Module):
    def __init__(self, dim, flag_for_pulse=False):
        super().__init__()
        self.flag_for_pulse = flag_for_pulse
        self.lit = False
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.lin(x)
        {test}
            m = y > 0
            z = y[m]  # {marker}
        return y
{extra}

model = SineGen(4{passed}).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    model(x).sum().backward()
    opt.step()
'''

OFF = {
    "param-default": ("if self.flag_for_pulse:", "", ""),
    "param-passed-false": ("if self.flag_for_pulse:", ", flag_for_pulse=False", ""),
    "literal": ("if self.lit:", "", ""),
}
ON = {
    "passed-true": ("if self.flag_for_pulse:", ", flag_for_pulse=True", ""),
    "written-elsewhere": ("if self.lit:", "", "\n\ndef enable(m):\n    m.lit = True\n"),
    "subclass": ("if self.flag_for_pulse:", "", "\n\nclass PulseGen(SineGen):\n    pass\n"),
}


def _source(test: str, passed: str, extra: str, marker: str) -> str:
    return HEAD.replace("{test}", test).replace("{passed}", passed).replace("{extra}", extra).replace("{marker}", marker)


@pytest.mark.parametrize("case", sorted(OFF))
def test_branch_every_construction_turns_off(case):
    assert [f for f in marked_findings(_source(*OFF[case], "clean")) if f[0] == "TSL105"] == []


@pytest.mark.parametrize("case", sorted(ON))
def test_valid_branch_that_may_run(case):
    assert ("TSL105", "flag") in marked_findings(_source(*ON[case], "flag"))
