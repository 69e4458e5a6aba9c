"""A device tensor Python turns into an int (`__index__`) is a host read (TSL101, implicit form):
a slice bound (`pred[:length]` with `length` an element of device lengths, `x[a:b]`), and an
argument of `range(...)`. VALID near-misses: bounds taken from host data (`lengths.tolist()`,
`len(y)`, `x.size(0)`), literal bounds, host tensors (lengths kept on the CPU), and reads outside
the per-step loop."""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

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
    lines = source.splitlines()
    found = []
    for f in lint_text(source, "train.py", Config()):
        text = lines[f.line - 1]
        if "# flag" in text or "# clean" in text:
            found.append((f.code, "flag" if "# flag" in text else "clean"))
    return sorted(found)


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
