"""What a project model's forward returns, called with a device input in another module: the
tuple elements the forward's own module cannot place (a `torch.cat` of its heads' outputs) are
where the calling module knows the output is, on the device, as that module would say alone
(`_, out = model(img.cuda())`), so a helper handed `out` reads a device tensor. VALID: the same
model called with a host input."""

from __future__ import annotations

import pytest

from tests.test_objects import project

MODEL = '''
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x), self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(4, 8)

    def forward(self, x):
        out = []
        feats, atten = self.backbone(x)
        out.append((self.head(feats), self.head(feats)))
        p, p_d = list(zip(*out))
        return p, torch.cat(p_d, 0), atten, x.new_ones(1)
'''

POST = '''
def postprocess(prediction, thre=0.5):
    kept = []
    for image_pred in prediction:
        image_pred = image_pred[image_pred[:, 0] >= thre]
        kept.append(image_pred)
    return kept
'''

EVAL = '''
import torch
from model import Net
from post import postprocess


def evaluate(model, loader):
    model.eval()
    for img, _ in loader:
        with torch.no_grad():
            _, outputs = model(img{copy})
            outputs = postprocess(outputs.unsqueeze(0))


def main(loader):
    evaluate(Net(){move}, loader)
'''


@pytest.mark.parametrize(
    ("copy", "move", "expected"),
    [(".cuda(non_blocking=True)", ".cuda()", {("post.py", 5, "TSL105")}), ("", "", set())],
    ids=["device", "host"],
)
def test_device_output_element_reaches_a_helper(tmp_path, capsys, copy, move, expected):
    files = {"model.py": MODEL, "post.py": POST, "eval.py": EVAL.format(copy=copy, move=move)}
    assert set(project(tmp_path, files, capsys, select="TSL105")) == expected
