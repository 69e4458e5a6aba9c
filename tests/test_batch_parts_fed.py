"""A loader feeds the device when the batch it yields is handed to another module's method that
copies its parts (`for k, v in data.items(): data[k] = v.cuda(non_blocking=True)`): `data.items()`
of the parameter is a view of the batch itself, so the loader is found and the dataset its
transforms build float images for is fed (TSL304). The end-to-end cases also held before (the
method runs a step, which marks the loader too); the summary case is what changed (stcn-vos,
where the step call is not resolved). VALID: the same method reading the parts on the host only."""

from __future__ import annotations

import pytest

from tests.test_objects import project

DATASET = '''
from torch.utils.data import Dataset
from torchvision import transforms


class Frames(Dataset):
    def __init__(self, root):
        self.final_im_transform = transforms.Compose([transforms.ToTensor()])

    def __getitem__(self, i):
        return {"rgb": self.final_im_transform(load(i)), "gt": i}
'''

MODEL = '''
import torch


class Model:
    def __init__(self, net, opt):
        self.net, self.opt = net, opt

    def train(self):
        self.net.train()
        return self

    def do_pass(self, data, it):
        for k, v in data.{method}():
            {body}
        loss = self.net(data["rgb"]).sum()
        loss.backward()
        self.opt.step()
'''

TRAIN = '''
import torch
from torch.utils.data import DataLoader
from dataset import Frames
from model import Model


def construct_loader(dataset):
    sampler = None
    loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
    return sampler, loader


def renew_loader():
    return construct_loader(Frames("x"))


model = Model(NET.cuda(), OPT).train()
train_sampler, train_loader = renew_loader()
for it in range(10):
    for data in train_loader:
        model.do_pass(data, it)
'''


@pytest.mark.parametrize("method", ["items", "values"])
def test_parts_copied_by_another_module_feed_the_loader(tmp_path, capsys, method):
    body = "data[k] = v.cuda(non_blocking=True)" if method == "items" else "v.cuda(non_blocking=True)"
    files = {"dataset.py": DATASET, "model.py": MODEL.format(method="items" if method == "items" else "values", body=body.replace("data[k]", "data[k]") if method == "items" else body).replace("for k, v in data.values()", "for v in data.values()"), "train.py": TRAIN}
    assert ("dataset.py", 8, "TSL304") in set(project(tmp_path, files, capsys, select="TSL304"))


def test_valid_parts_read_on_the_host(tmp_path, capsys):
    files = {"dataset.py": DATASET, "model.py": MODEL.format(method="items", body="print(k)"), "train.py": TRAIN.replace("NET.cuda()", "NET")}
    assert set(project(tmp_path, files, capsys, select="TSL304")) == set()


def test_items_of_a_parameter_is_the_batch_itself(tmp_path):
    """The summary's feed of `for k, v in data.items(): data[k] = v.cuda()` iterates the
    parameter itself (the view then finds the loader its callers' batches come from), not an
    opaque call of `.items()`."""
    from torchsync_lint.project.summarizing import summarize_file

    (tmp_path / "model.py").write_text(MODEL.format(method="items", body="data[k] = v.cuda(non_blocking=True)"))
    _, summary = summarize_file(str(tmp_path), "model.py")
    assert [feed["iter"] for feed in summary["feeds"]] == [{"k": "param", "fn": "model.py:Model.do_pass", "i": 1}]
