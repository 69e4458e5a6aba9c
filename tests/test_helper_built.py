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


# -- built from built: torch functions, tensor methods, round trips, helpers of built tensors ----
@pytest.mark.parametrize(
    "body",
    [
        # a grid of host aranges, stacked, repeated, cast
        "    gx = torch.arange(0, 8).unsqueeze(1).repeat(1, 8)\n    grid = torch.stack([gx, gx.t()], dim=-1)\n    g = grid.unsqueeze(0).repeat(2, 1, 1, 1).float().to(x.device)  # flag",
        # a kernel: a window times a helper of a host linspace scaled in place (`t *= math.pi`)
        "    win = torch.hann_window(9, periodic=False)\n    t = torch.linspace(-4, 4, 9)\n    t *= math.pi\n    k = (sinc(t) * win).view(1, 1, -1).to(x)  # flag",
        # a host copy of a device value, copied back
        "    labels = model(x).argmax(1).cpu().unique()\n    labels = labels.cuda()  # flag",
        # one-hot of a host fill
        "    hot = F.one_hot(torch.zeros(8, dtype=torch.long), 4).float().to(x.device)  # flag",
    ],
)
def test_built_from_built(body):
    source = HEAD.replace("import numpy as np\n", "import math\n\nimport numpy as np\nimport torch.nn.functional as F\n").replace(
        "def fill(n):", "def sinc(t):\n    return torch.where(t == 0, torch.tensor(1.0, device=t.device, dtype=t.dtype), torch.sin(t) / t)\n\n\ndef fill(n):"
    )
    assert marked_findings(source.format(body=body)) == [("TSL305", "flag")]


@pytest.mark.parametrize(
    "body",
    [
        # a host table built once, gathered with the batch's indices: the data (and non_blocking)
        "    rows = table_once[x.cpu().long()].repeat(2).cuda(non_blocking=True)  # clean",
        # filled on the device, or with device= of a device tensor
        "    gx = torch.arange(0, 8, device=x.device).repeat(2)  # clean",
        "    one = torch.full((), 1.0, device=x.device, dtype=x.dtype)  # clean",
    ],
)
def test_valid_not_built_in_the_step(body):
    source = HEAD.replace("model = torch.nn.Linear", "table_once = torch.zeros(8, 4)\nmodel = torch.nn.Linear")
    assert [f for f in marked_findings(source.format(body=body)) if f[0] == "TSL305"] == []


def test_math_constants_are_host_numbers():
    """`t *= math.pi` keeps a host tensor a host tensor: `math.pi` is a Python number."""
    import libcst as cst

    from torchsync_lint.project.summarizing import analyse

    analysis = analyse("import math\nimport torch\nt = torch.linspace(0, 1, 4)\nt *= math.pi\nu = t\n")
    nodes = analysis.index.tree.nodes
    pi = [analysis.values.kind(n).value for n in nodes if type(n) is cst.Attribute and n.attr.value == "pi"]
    last_t = [n for n in nodes if type(n) is cst.Name and n.value == "t"][-1]
    assert pi == ["host"] and analysis.values.kind(last_t).value == "host-tensor"


def test_valid_pinned_staging_buffer_is_data():
    """A pinned buffer built once and refilled with the batch every step is a staging area for
    data: its copy is TSL301's (the fix is `non_blocking`), not a tensor built in the step."""
    source = HEAD.replace("model = torch.nn.Linear", "staging = torch.empty(8, 4).pin_memory()\nmodel = torch.nn.Linear")
    body = "    staging.copy_(torch.ones(8, 4))\n    xs = staging.to(x.device)  # clean"
    assert [f for f in marked_findings(source.format(body=body)) if f[0] == "TSL305"] == []
