"""A dataset class that keeps its tensors on the device (`self.data = self.data.to("cuda")` in
`__init__`, `__getitem__` returning `self.data[i], self.targets[i]`) yields device batches: the
loader has nothing to pin (TSL302) or load in workers (TSL303), and `.cuda()` of its batches is
a no-op (TSL301), in a loop over it or in an ignite process function run over it (through a
torch function of the batch: `F.one_hot(y, 10).cuda()`). The VALID/INVALID near-misses: a
class whose data stays on the host, one whose `__getitem__` calls a transform, a device store
followed by a host one, a class of another module."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings
from tests.test_objects import project

DATASET = '''
class Fast(Dataset):
    def __init__(self, data, targets):
        self.data = data.unsqueeze(1).float().div(255)
        self.data, self.targets = {store}, targets.to("cuda")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
{getitem}
'''

GETITEMS = {
    "tuple": "        img, target = self.data[index], self.targets[index]\n        return img, target",
    "direct": "        return self.data[index], self.targets[index]",
    "dict": "        return {'image': self.data[index], 'label': self.targets[index]}",
}

LOOP = '''import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
{dataset}

def main(data, targets, model, opt):
    loader = DataLoader(Fast(data, targets), batch_size=128, num_workers=0)  # {marker}
    for batch in loader:
        x, y = {unpack}
        x, y = x.cuda(), F.one_hot(y, 10).float().cuda()  # {marker}
        loss = model(x).sum()
        loss.backward()
        opt.step()
'''


@pytest.mark.parametrize("getitem", sorted(GETITEMS))
def test_device_items_need_no_pinning_workers_or_copies(getitem):
    unpack = "batch['image'], batch['label']" if getitem == "dict" else "batch"
    source = LOOP.format(dataset=DATASET.format(store='self.data.to("cuda")', getitem=GETITEMS[getitem]), unpack=unpack, marker="clean")
    assert marked_findings(source) == []


@pytest.mark.parametrize(
    ("store", "getitem"),
    [
        ("self.data.float()", GETITEMS["direct"]),  # stays on the host
        ('self.data.to("cuda").cpu()', GETITEMS["direct"]),  # moved back
        ('self.data.to("cuda")', "        return self.transform(self.data[index]), self.targets[index]"),  # a call per item
    ],
)
def test_host_items_still_flagged(store, getitem):
    source = LOOP.format(dataset=DATASET.format(store=store, getitem=getitem), unpack="batch", marker="flag")
    assert ("TSL301", "flag") in marked_findings(source)


def test_ignite_process_function_of_a_device_dataset(tmp_path, capsys):
    files = {
        "data.py": "import torch\nfrom torch.utils.data import Dataset\n" + DATASET.format(store='self.data.to("cuda")', getitem=GETITEMS["tuple"]),
        "train.py": '''
import torch
import torch.nn.functional as F
from ignite.engine import Engine
from torch.utils.data import DataLoader
from data import Fast


def main(data, targets, model, opt):
    def step(engine, batch):
        x, y = batch
        y = F.one_hot(y, num_classes=10).float()
        x, y = x.cuda(), y.cuda()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss.item()

    trainer = Engine(step)
    dl_train = DataLoader(Fast(data, targets), batch_size=128, shuffle=True, num_workers=0)
    trainer.run(dl_train, max_epochs=3)
''',
    }
    found = project(tmp_path, files, capsys, select="TSL3")
    assert found == {}


def test_ignite_process_function_of_a_host_dataset_still_flagged(tmp_path, capsys):
    files = {
        "data.py": "import torch\nfrom torch.utils.data import Dataset\n" + DATASET.format(store="self.data.float()", getitem=GETITEMS["tuple"]),
        "train.py": '''
import torch
from ignite.engine import Engine
from torch.utils.data import DataLoader
from data import Fast


def main(data, targets, model, opt):
    def step(engine, batch):
        x, y = batch
        x, y = x.cuda(), y.cuda()
        loss = model(x).sum()
        loss.backward()
        opt.step()

    trainer = Engine(step)
    trainer.run(DataLoader(Fast(data, targets), batch_size=128, num_workers=4), max_epochs=3)
''',
    }
    found = project(tmp_path, files, capsys, select="TSL3")
    assert found[("train.py", 11, "TSL301")] == 2 and ("train.py", 17, "TSL302") in found
