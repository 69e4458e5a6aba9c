"""A number accumulated with tensors is a tensor where the added ones are: a helper that starts
`total = 0` and adds `(p.grad ** 2).sum()` for each parameter (`+=`, then `total = total **
0.5`; `total = total + x` in the loop is not followed yet) returns a device tensor for a device model's parameters, so
`float(grad_norm(model.parameters()))` in another module's step reads the device. VALID: the
same helper over a CPU model's parameters; an accumulator of Python numbers (`p.numel()`)."""

from __future__ import annotations

import pytest

from tests.test_objects import project

UTILS = '''
import torch


def grad_norm(parameters, norm_type=2):
    total = 0
    try:
        for p in parameters:
            {add}
        total = total ** (1.0 / norm_type)
    except Exception as e:
        print(e)
    return total


def count(parameters):
    total = 0
    for p in parameters:
        total += p.numel()
    return total
'''

TRAIN = '''
import torch
from utils import count, grad_norm


def main(loader):
    model = torch.nn.Linear(4, 4){move}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x{copy}).sum().backward()
        norm = float(grad_norm(model.parameters()))
        size = float(count(model.parameters()))
        opt.step()
'''

ADDS = {"pow-sum": "total += (p.grad.data ** norm_type).sum()", "norm": "total += p.grad.norm(norm_type) ** norm_type"}


@pytest.mark.parametrize("add", sorted(ADDS))
def test_accumulated_device_norm_is_read(tmp_path, capsys, add):
    files = {"utils.py": UTILS.replace("{add}", ADDS[add]), "train.py": TRAIN.format(move=".cuda()", copy=".cuda(non_blocking=True)")}
    assert {k[1] for k in project(tmp_path, files, capsys, select="TSL101") if k[0] == "train.py"} == {11}


def test_valid_cpu_model_norm(tmp_path, capsys):
    files = {"utils.py": UTILS.replace("{add}", ADDS["pow-sum"]), "train.py": TRAIN.format(move="", copy="")}
    assert set(project(tmp_path, files, capsys, select="TSL101")) == set()
