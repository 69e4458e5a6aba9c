"""A tensor a helper of the module builds on the host and returns, copied to the device in the
step, is TSL305's (built in the step), not TSL301's (data the step is handed): the helper
computes it itself (`get_sinusoid_encoding_table(n, d)` returning `torch.FloatTensor(table)` of
an array it fills), or fills it (`torch.zeros(n)`), or a mask drawn on the host and compared
(`torch.rand(shape) < p`). The VALID near-misses: a helper that wraps what it is handed
(`torch.from_numpy(image)`: the data itself), a helper that builds on the device, a copy out of
the step."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

HEAD = '''import numpy as np
import torch
from torch.utils.data import DataLoader


def table(n, d):
    rows = np.array([[pos / 10000 ** (2 * i / d) for i in range(d)] for pos in range(n)])
    rows[:, 0::2] = np.sin(rows[:, 0::2])
    return torch.FloatTensor(rows)


def fill(n):
    return torch.zeros(n, 4)


def wrap(image):
    return torch.from_numpy(image)


def on_device(n):
    return torch.zeros(n, 4, device="cuda")


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, num_workers=2, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
{body}
    model(x).sum().backward()
    opt.step()
'''


@pytest.mark.parametrize(
    "body",
    [
        "    pos = table(8, 4).to(x.device)  # flag",
        "    pos = table(8, 4)[:8, :].unsqueeze(0).cuda()  # flag",
        "    pos = x + table(  # flag\n        8, 4\n    )[:8].to(x.device)",
        "    pad = fill(8).to(x.device)  # flag",
        "    keep = (torch.rand(8, 4) < 0.1).to(x.device)  # flag",
        "    keep = (torch.rand(8, 4) >= 0.5).cuda()  # flag",
    ],
)
def test_built_by_a_helper_or_drawn_on_the_host(body):
    assert marked_findings(HEAD.format(body=body)) == [("TSL305", "flag")]


@pytest.mark.parametrize(
    "body",
    [
        "    img = wrap(np.ones((8, 4), dtype=np.float32)).to(x.device, non_blocking=True)  # clean",
        "    pad = on_device(8).to(x.device)  # clean",
        "    keep = (torch.rand(8, 4, device='cuda') < 0.1).to(x.device)  # clean",
        "    keep = torch.rand(8, 4, device=x.device) < 0.1  # clean",
    ],
)
def test_valid_data_handed_in_or_filled_on_the_device(body):
    assert [f for f in marked_findings(HEAD.format(body=body)) if f[0] in ("TSL305", "TSL301")] == []


def test_a_helper_copy_outside_the_step_is_not_flagged():
    source = HEAD.format(body="    pass") + "\npos = table(8, 4).to('cuda')  # clean\n"
    assert [f for f in marked_findings(source) if f[0] == "TSL305"] == []
