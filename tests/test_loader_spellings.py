"""Spellings real training scripts use for what the rules already know:

- `torch.cuda.FloatTensor(np.ones(n))` and its aliases (`Tensor = torch.cuda.FloatTensor if cuda
  else torch.FloatTensor`, PyTorch-GAN's idiom) read host data into a CUDA tensor: TSL305; given
  a size they allocate on the device (no copy);
- `DataLoader(ds, **params)` with `params` a dict display in the same scope is the loader those
  keywords spell (TSL302/TSL303 as if written out); a dict that is changed, built elsewhere or
  read from a configuration stays unknown;
- every module tqdm exports its bar from (`tqdm.autonotebook`, `tqdm.std`...) wraps a loader.
"""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

GAN = '''\
import numpy as np
import torch

cuda = True if torch.cuda.is_available() else False
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
LongTensor = torch.cuda.LongTensor
model = torch.nn.Linear(4, 1)
if cuda:
    model.cuda()
for i in range(100):
    x = torch.randn(8, 4, device="cuda")
    {line}
    loss = model(x).sum()
    loss.backward()
'''


def _codes(source: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in lint_text(source, "train.py", Config()))


@pytest.mark.parametrize(
    "line",
    [
        "valid = Tensor(np.ones((8, 1)))",
        "labels = LongTensor(np.random.randint(0, 10, 8))",
        "z = torch.cuda.FloatTensor(np.random.normal(0, 1, (8, 4)))",
        "ids = torch.cuda.LongTensor([1, 2, 3])",
    ],
    ids=["aliased by IfExp", "aliased", "qualified", "a list"],
)
def test_a_cuda_constructor_of_host_data_copies_it(line):
    assert _codes(GAN.format(line=line)) == [(12, "TSL305")]


@pytest.mark.parametrize(
    "line",
    [
        "buf = Tensor(8, 4)",  # a size: allocated on the device
        "buf = torch.cuda.FloatTensor(x.size(0))",
        "valid = torch.FloatTensor(np.ones((8, 1)))",  # a CPU tensor: no copy here
        "valid = Tensor(x)",  # a device tensor: no host data
    ],
    ids=["size", "size of a tensor", "CPU constructor", "a tensor"],
)
def test_a_cuda_constructor_given_a_size_allocates_on_the_device(line):
    assert [c for c in _codes(GAN.format(line=line)) if c[0] == 12] == []


LOADER = '''\
import torch
from torch.utils.data import DataLoader


def train(ds, opt):
    {params}
    loader = DataLoader(ds, **params)
    model = torch.nn.Linear(4, 1).cuda()
    for x in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
'''


@pytest.mark.parametrize(
    "params, expected",
    [
        ("params = {'batch_size': opt.batch_size, 'shuffle': True, 'num_workers': opt.num_workers}", [(7, "TSL302")]),
        ("params = {'batch_size': 8, 'num_workers': 4, 'pin_memory': False}", [(7, "TSL302")]),
        ("params = {'batch_size': 8, 'num_workers': 0, 'pin_memory': True}", [(7, "TSL303")]),
    ],
    ids=["no pin_memory", "pin_memory=False", "num_workers=0"],
)
def test_a_dict_display_spells_the_loader(params, expected):
    assert _codes(LOADER.format(params=params)) == expected


@pytest.mark.parametrize(
    "params",
    [
        "params = {'batch_size': 8, 'num_workers': 4}\n    params['pin_memory'] = opt.pin",
        "params = {'batch_size': 8, 'num_workers': 4}\n    params.update(opt.loader)",
        "params = {'batch_size': 8, 'num_workers': 4, **opt.loader}",
        "params = opt.loader_params",
        "params = {'batch_size': 8, 'num_workers': 4}\n    setup(params)",
    ],
    ids=["item stored", "updated", "merged", "configured", "handed on"],
)
def test_a_dict_that_may_change_stays_unknown(params):
    source = LOADER.format(params=params).replace("def train(ds, opt):", "def setup(p):\n    pass\n\n\ndef train(ds, opt):")
    assert [c for c in _codes(source) if c[1] in ("TSL302", "TSL303")] == []


def test_a_dict_fix_appends_the_keyword(tmp_path):
    from torchsync_lint.cli import main

    path = tmp_path / "train.py"
    path.write_text(LOADER.format(params="params = {'batch_size': 8, 'num_workers': 4}"))
    main(["check", "--fix", "--no-cache", str(path)])
    fixed = path.read_text()
    compile(fixed, "train.py", "exec")
    assert "DataLoader(ds, **params, pin_memory=" in fixed


TQDM = '''\
import torch
from torch.utils.data import DataLoader
from {module} import tqdm

loader = DataLoader(range(10), batch_size=2, num_workers=2, pin_memory=True)
model = torch.nn.Linear(4, 1).cuda()
for x in tqdm(loader):
    y = x.cuda()
    model(y).sum().backward()
'''


@pytest.mark.parametrize("module", ["tqdm", "tqdm.auto", "tqdm.autonotebook", "tqdm.std"])
def test_every_tqdm_module_wraps_a_loader(module):
    assert _codes(TQDM.format(module=module)) == [(8, "TSL301")]
