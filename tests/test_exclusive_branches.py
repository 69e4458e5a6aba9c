"""Which bindings reach a use: one in the `if` branch of a statement does not reach a use in
its `else` in the same pass (`avg = v / n` then `if distributed: avg = torch.tensor(avg).cuda()
... else: log(avg)` logs the Python float); it still comes round a loop when nothing in the loop
rebinds the name first. And `type(v) == float or type(v) == int` narrows `v` to a Python scalar
in that branch, as `isinstance(v, float)` does."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.project.summarizing import analyse
from tests._marked import marked_findings


def _defs_at(source: str, name: str, line: int) -> list[int]:
    analysis = analyse(source)
    uses = [n for n in analysis.index.tree.nodes if type(n) is cst.Name and n.value == name and analysis.index.line(n) == line]
    return sorted(analysis.index.line(d.stmt) for d in analysis.values.reaching_defs(uses[-1]))


def test_if_branch_does_not_reach_its_else():
    source = "def f(items, d):\n    for k, v in items:\n        avg = v / 2\n        if d:\n            avg = g(avg)\n        else:\n            use(avg)\n"
    assert _defs_at(source, "avg", 7) == [3]


def test_elif_branch_does_not_reach_a_later_else():
    source = "def f(x, a, b):\n    y = 0\n    if a:\n        y = 1\n    elif b:\n        y = 2\n    else:\n        use(y)\n"
    assert _defs_at(source, "y", 8) == [2]


def test_still_carried_round_a_loop_without_a_rebinding():
    source = "def f(items, d):\n    avg = 0\n    for v in items:\n        if d:\n            avg = g(v)\n        else:\n            use(avg)\n"
    assert _defs_at(source, "avg", 7) == [2, 5]


def test_after_the_if_both_reach():
    source = "def f(d):\n    x = 1\n    if d:\n        x = 2\n    else:\n        pass\n    use(x)\n"
    assert _defs_at(source, "x", 7) == [2, 4]


LOOP = '''import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(8, 4, device="cuda")).sum()
    loss.backward()
    opt.step()
    avg = float(loss.item()) / 2  # (the read itself)
    if step < 0:
        avg = torch.tensor(avg).cuda()
        print(avg)
    else:
        print("%.3f" % avg)  # clean
{extra}
'''


def test_valid_python_float_in_the_else_is_not_formatted_from_the_device():
    assert [f for f in marked_findings(LOOP.format(extra="")) if f[0] == "TSL103"] == []


def test_type_equality_narrows_to_a_python_scalar():
    source = """import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    v = model(torch.randn(8, 4, device="cuda")).sum() if step % 2 else 0.5
    v.backward() if step % 2 else None
    if type(v) == float or type(v) == int:
        print("%.3f" % v)  # clean
    if type(v) is float:
        print("%.3f" % v)  # clean
    opt.step()
"""
    assert [f for f in marked_findings(source) if f[0] == "TSL103"] == []
