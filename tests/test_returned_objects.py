"""A project function's returned object, called per step in another module.

`nets = build_model(args)` then `nets(x)` / `nets.encode(x)` in a training loop: the summary
names the callee by the call that made the object, and the view finds the method among what
the project function returns (an instance it builds, one of several by the config). The VALID
near-misses: the object used once, outside the loop; a function that returns a library object;
a function nobody calls per step.
"""

from __future__ import annotations

import pytest

from tests.test_objects import project

# The module class both model files define (its lines are the tests' expected lines).
MAPPING = '''class Mapping(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, z, y):
        idx = torch.LongTensor(range(y.size(0))).to(y.device)
        return self.lin(z)[idx]
'''

MODEL = '''
import torch
import torch.nn as nn


''' + MAPPING + '''
    def sample(self, z):
        return self.lin(z) + torch.randn(4).cuda()


class Other(nn.Module):
    def forward(self, z, y):
        return z + torch.zeros(4).cuda()


def build_model(args):
    net = Mapping()
    return net


def build_either(args):
    return Mapping() if args.mapping else Other()


def build_library(args):
    return nn.Linear(4, 4)
'''

LOOP = '''
import torch
from core.model import {maker}


def train(args, loader):
    nets = {maker}(args)
    opt = torch.optim.Adam(nets.parameters())
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = {use}.sum()
        loss.backward()
        opt.step()
'''


def _lint(tmp_path, capsys, maker: str, use: str, loop: str = LOOP):
    files = {"core/__init__.py": "", "core/model.py": MODEL, "train.py": loop.format(maker=maker, use=use)}
    return {(f, line, code) for (f, line, code) in project(tmp_path, files, capsys, select="TSL305")}


def test_returned_instance_called_per_step(tmp_path, capsys):
    assert _lint(tmp_path, capsys, "build_model", "nets(x, y)") == {("model.py", 12, "TSL305")}


def test_returned_instance_method_per_step(tmp_path, capsys):
    assert _lint(tmp_path, capsys, "build_model", "nets.sample(x)") == {("model.py", 16, "TSL305")}


def test_one_of_several_returned_classes(tmp_path, capsys):
    assert _lint(tmp_path, capsys, "build_either", "nets(x, y)") == {("model.py", 12, "TSL305"), ("model.py", 21, "TSL305")}


def test_module_qualified_maker(tmp_path, capsys):
    loop = LOOP.replace("from core.model import {maker}", "import core.model as models").replace("nets = {maker}(args)", "nets = models.{maker}(args)")
    assert _lint(tmp_path, capsys, "build_model", "nets(x, y)", loop) == {("model.py", 12, "TSL305")}


def test_valid_returned_object_used_once(tmp_path, capsys):
    loop = '''
import torch
from core.model import {maker}


def train(args, loader, z):
    nets = {maker}(args)
    preview = {use}
    for x, y in loader:
        loss = x.cuda(non_blocking=True).sum()
        loss.backward()
    return preview
'''
    assert _lint(tmp_path, capsys, "build_model", "nets(z, z)", loop) == set()


def test_valid_library_object_returned(tmp_path, capsys):
    assert _lint(tmp_path, capsys, "build_library", "nets(x)") == set()


def test_valid_other_method_not_run(tmp_path, capsys):
    # `nets(x, y)` runs `forward`, not `sample`: only line 12
    assert ("model.py", 16, "TSL305") not in _lint(tmp_path, capsys, "build_model", "nets(x, y)")


# -- attribute dicts: `nets = Munch(mapping=net)`, handed around, `nets.mapping(x)` ------------
BUILD_DICT = '''
import torch
import torch.nn as nn
{imports}


''' + MAPPING + '''

def build_model(args):
    mapping = nn.DataParallel(Mapping())
    nets = {maker}(mapping_network=mapping)
    return nets, {maker}(mapping_network=mapping)
'''

SOLVER = '''
import torch
import torch.nn as nn
from core.model import build_model


class Solver(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.nets, self.nets_ema = build_model(args)
        self.to("cuda")

    def train(self, fetch):
        nets = self.nets
        opt = torch.optim.Adam(nets.{params}.parameters())
        for i in range(100):
            x, y = next(fetch)
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = compute_loss(nets, x, y)
            loss.backward()
            opt.step()


def compute_loss(nets, x, y):
    return {use}.sum()
'''

MAKERS = [
    ("from munch import Munch", "Munch"),
    ("from easydict import EasyDict", "EasyDict"),
    ("import types", "types.SimpleNamespace"),
]


def _lint_dict(tmp_path, capsys, imports, maker, use, params="mapping_network"):
    files = {
        "core/__init__.py": "",
        "core/model.py": BUILD_DICT.format(imports=imports, maker=maker),
        "core/solver.py": SOLVER.format(use=use, params=params),
        "main.py": "from core.solver import Solver\n\n\ndef main(args, fetch):\n    Solver(args).train(fetch)\n",
    }
    return {(f, line, code) for (f, line, code) in project(tmp_path, files, capsys, select="TSL305")}


@pytest.mark.parametrize(("imports", "maker"), MAKERS, ids=[m for _, m in MAKERS])
def test_attribute_dict_item_called_per_step(tmp_path, capsys, imports, maker):
    assert _lint_dict(tmp_path, capsys, imports, maker, "nets.mapping_network(x, y)") == {("model.py", 13, "TSL305")}


@pytest.mark.parametrize(
    "use",
    [
        "x",  # the dict handed on, its item never called
        "nets.generator(x, y)",  # a key the dict does not hold
        "len(nets.items()) * x",  # a dict method, not an item
    ],
)
def test_valid_attribute_dict_item_not_called(tmp_path, capsys, use):
    assert _lint_dict(tmp_path, capsys, "from munch import Munch", "Munch", use) == set()
