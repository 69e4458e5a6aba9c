"""A device tensor Python turns into an int (`__index__`) is a host read (TSL101, implicit form):
a slice bound (`pred[:length]` with `length` an element of device lengths, `x[a:b]`), and an
argument of `range(...)`. VALID near-misses: bounds taken from host data (`lengths.tolist()`,
`len(y)`, `x.size(0)`), literal bounds, host tensors (lengths kept on the CPU), and reads outside
the per-step loop."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

LOOP = '''import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{before}
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    lengths = torch.randint(1, 4, (8,), device="cuda")
    host_lengths = torch.randint(1, 4, (8,))
    out = model(x)
{body}
    out.sum().backward()
    opt.step()
'''


def _marked(body: str, before: str = "") -> list[tuple[str, str]]:
    source = LOOP.format(body=body, before=before)
    return marked_findings(source)


@pytest.mark.parametrize("body", [
    "    for row, n in zip(out, lengths):\n        kept = row[:n]  # flag",
    "    for i in range(8):\n        end = lengths[i]\n        kept = out[i, 1:end]  # flag",
    "    total = 0\n    for t in range(lengths.max()):  # flag\n        total += t",
], ids=["zip-element-bound", "indexed-element-bound", "range-of-device-max"])
def test_a_device_int_read_by_python_is_a_host_read(body):
    assert _marked(body) == [("TSL101", "flag")]


@pytest.mark.parametrize("body", [
    "    for row, n in zip(out, lengths.tolist()):\n        kept = row[:n]  # clean",
    "    kept = out[1:-1]  # clean",
    "    kept = out[:len(x)]  # clean",
    "    for t in range(x.size(0)):  # clean\n        pass",
    "    for row, n in zip(out, host_lengths):\n        kept = row[:n]  # clean",
], ids=["tolist", "literals", "len", "size", "host-tensor"])
def test_host_bounds_are_not_reads(body):
    assert _marked(body) == []


def test_a_device_bound_outside_the_loop_is_read_once():
    before = 'lengths0 = torch.ones(3, dtype=torch.long, device="cuda")\nhead = torch.zeros(9)[:lengths0[0]]  # clean\n'
    assert _marked("    pass", before=before) == []


MODELS = """\
    import torch


    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, lengths):
            decode_lengths = (lengths - 1).tolist()
            return self.lin(x), decode_lengths, lengths
"""

TRAIN = """\
    import torch
    from models import Decoder


    def main(loader, device):
        decoder = Decoder().to(device)
        opt = torch.optim.SGD(decoder.parameters(), lr=0.1)
        for x, lengths in loader:
            scores, decode_lengths, dev_lengths = decoder(x.to(device, non_blocking=True), lengths.to(device, non_blocking=True))
            for j in range(8):
                kept = scores[j][:{bound}]
            scores.sum().backward()
            opt.step()
"""


@pytest.mark.parametrize("bound,expected", [
    ("decode_lengths[j]", {}),  # the forward returns a Python list there
    ("dev_lengths[j]", {("train.py", 11, "TSL101"): 1}),  # and the device lengths here
    ("scores[j].argmax()", {("train.py", 11, "TSL101"): 1}),
], ids=["host-list-element", "device-element", "device-result"])
def test_what_a_project_model_returns_decides_the_bound(tmp_path, capsys, bound, expected):
    from tests.test_objects import project

    found = project(tmp_path, {"models.py": MODELS, "train.py": TRAIN.replace("{bound}", bound)}, capsys, select="TSL101")
    assert {k: v for k, v in found.items() if k[0] == "train.py"} == expected, found
