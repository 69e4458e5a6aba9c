"""Tensors computed from what callers pass (issue 21): a helper of another module that slices,
compares and combines its parameters with torch functions returns a tensor where its arguments
are, however deep the expression; a submodule's output inside a model's forward says nothing of
the model's place. Each case with a near-miss that must stay silent; projects are checked as a
tree and file by file (tests/test_objects.py's `project`)."""

from __future__ import annotations

import pytest

from tests.test_objects import project

GEOMETRY = """\
    import torch


    def overlap(a, b):
        lo = torch.max(a[:, :2].unsqueeze(1), b[:, :2].unsqueeze(0))
        hi = torch.min(a[:, 2:].unsqueeze(1), b[:, 2:].unsqueeze(0))
        inter = torch.clamp(hi - lo, min=0)
        area = inter[:, :, 0] * inter[:, :, 1]
        return area / (-(a[:, 2] - a[:, 0])).unsqueeze(1)
"""

TRAIN = """\
    import torch
    from geometry import overlap


    def train(model, loader, opt, priors):
        for boxes, labels in loader:
            boxes = boxes.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            best, idx = overlap({boxes}, priors).max(dim=0)
            labels[best < 0.5] = 0
            loss = model(boxes, labels)
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize(("boxes", "flagged"), [("boxes", True), ("torch.zeros(4, 4)", False)])
def test_a_helper_computing_on_its_parameters_returns_where_the_call_passes(tmp_path, capsys, boxes, flagged):
    """`overlap(boxes, priors)` slices, clamps and divides its parameters through a chain deeper
    than the analysis follows definitions: the result is where `boxes` is. With device boxes its
    `.max()` makes a device mask (TSL105); with a CPU tensor the same code is silent."""
    found = project(tmp_path, {"geometry.py": GEOMETRY, "train.py": TRAIN.format(boxes=boxes)}, capsys)
    assert found == ({("train.py", 10, "TSL105"): 1} if flagged else {})


HEADS = """\
    from torch import nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.conv(x)


    def build_head():
        return Head()
"""

NET = """\
    import torch.nn.functional as F
    from torch import nn
    from heads import build_head


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = build_head()

        def forward(self, x):
            return F.interpolate(self.head(x), size=x.size()[2:])
"""

SHOW = """\
    def show(writer, output, step):
        writer.add_image("pred", output[0].detach().cpu(), step)
"""

TRAINER = """\
    import torch
    from net import Net
    from show import show


    class Trainer:
        def __init__(self, writer, cuda, ids):
            self.model = Net()
            if cuda:
                self.model = torch.nn.DataParallel(self.model, device_ids=ids)
                self.model = self.model.{place}()
            self.writer = writer
            self.cuda = cuda

        def train(self, loader, opt):
            for i, sample in enumerate(loader):
                x, y = sample["image"], sample["label"]
                if self.cuda:
                    x, y = x.{move}, y.{move}
                output = self.model(x)
                loss = (output - y).pow(2).mean()
                loss.backward()
                opt.step()
                show(self.writer, output, i)
"""


@pytest.mark.parametrize(("place", "move", "flagged"), [("cuda", "cuda()", True), ("cpu", "float()", False)])
def test_a_submodules_output_in_a_forward_does_not_place_the_model(tmp_path, capsys, place, move, flagged):
    """Net.forward returns `F.interpolate(self.head(x))`: `self.head` is built in `__init__` (by
    another module's function) and never moved there, but it moves with the Net. The model stored on the Trainer is the CPU Net
    or, on one path, a moved one: its output is what train.py knew (a device tensor when the
    batch is copied to the GPU), not a host tensor. With model and batches kept on the CPU,
    show's `.cpu()` is no copy.
    """
    files = {"heads.py": HEADS, "net.py": NET, "show.py": SHOW, "train.py": TRAINER.format(place=place, move=move)}
    found = project(tmp_path, files, capsys)
    assert found == ({("show.py", 2, "TSL101"): 1} if flagged else {})
