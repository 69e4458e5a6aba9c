"""A loader read with `next(iter(loader))` in a function the step loop calls (a sample sheet every
N steps, a validation peek) feeds the device from where its batch goes, like a `for` over it:
unpinned, it is TSL302. VALID near-misses: the same function called once after training, a
pinned loader, and a batch that stays on the host."""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

SCRIPT = '''import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(10)), batch_size=2, num_workers=2, pin_memory=True)
val_loader = DataLoader(list(range(10)), batch_size=2, num_workers=1{pin})  # loader


{sampler}


for i, batch in enumerate(loader):
    x = batch.cuda(non_blocking=True)
    model(x).sum().backward()
    opt.step()
{call_in_loop}
{call_after}
'''

SAMPLERS = {
    "next-iter": "def sample(step):\n    imgs = next(iter(val_loader))\n    x = imgs['A'].cuda(non_blocking=True)\n    print(model(x).shape)",
    "next-of-iterator": "def sample(step):\n    it = iter(val_loader)\n    imgs = next(it)\n    x = imgs['A'].to('cuda')\n    return model(x)",
    "method": "class Sampler:\n    def sample(self, step):\n        imgs = next(iter(val_loader))\n        return model(imgs.cuda())\n\n\nsampler = Sampler()",
}
CALLS = {"next-iter": "sample(i)", "next-of-iterator": "sample(i)", "method": "sampler.sample(i)"}


def _findings(sampler: str, call: str, where: str, pin: str = "") -> list[tuple[int, str]]:
    source = SCRIPT.format(
        sampler=SAMPLERS[sampler], pin=pin,
        call_in_loop=f"    if i % 100 == 0:\n        {CALLS[sampler]}" if where == "loop" else "",
        call_after=CALLS[sampler] if where == "after" else "",
    )
    return sorted((f.line, f.code) for f in lint_text(source, "train.py", Config()) if f.code == "TSL302")


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_a_loader_sampled_per_step_feeds_the_device(sampler):
    assert _findings(sampler, CALLS[sampler], "loop") == [(7, "TSL302")]


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_a_loader_sampled_once_after_training_is_not_per_step(sampler):
    assert _findings(sampler, CALLS[sampler], "after") == []


def test_a_pinned_sampled_loader_is_configured():
    assert _findings("next-iter", "sample(i)", "loop", pin=", pin_memory=True") == []


def test_a_sampled_batch_that_stays_on_the_host_feeds_nothing():
    source = SCRIPT.format(
        sampler="def sample(step):\n    imgs = next(iter(val_loader))\n    print(imgs['A'].shape)", pin="",
        call_in_loop="    if i % 100 == 0:\n        sample(i)", call_after="",
    )
    assert [f for f in lint_text(source, "train.py", Config()) if f.code == "TSL302"] == []
