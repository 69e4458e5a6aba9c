"""A value backward runs on is in the model's graph, and so is what it is made of (issue 38,
DESIGN "evidence"): the terms summed into each of its bindings (`loss = loss_real + loss_fake`),
the elements of a display it unpacks (`loss, aux = a + b, c`), the receiver (and addend) of
tensor arithmetic methods (`loss.div(n)`, `ce.add(kl).sum()`), and what a helper of this module
returns there (`d_loss, parts = compute_d_loss(...)`: the first returned element and its terms).
Reading such a term on the host per step is TSL101.

VALID near-misses: a term that is a Python number (`reg = 0`), a returned element that is not the
backpropagated one, two names multiplied (which is the tensor is not known), and a module that
names no accelerator (the evidence only places values where one may be used)."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

HEAD = '''import torch
import torch.nn.functional as F


def adv_loss(logits, target):
    return F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, target))


{helpers}


def train(nets, optim, fetcher, total):
    {place}
    for i in range(total):
        x = next(fetcher)
{body}
        optim.zero_grad()
        loss.backward()
        optim.step()
'''


def _marked(helpers: str, body: str, place: str = 'nets.to("cuda")') -> list[tuple[str, str]]:
    source = HEAD.format(helpers=helpers, body=body, place=place)
    return marked_findings(source)


TERMS = "        real = adv_loss(nets.d(x), 1)\n        fake = adv_loss(nets.d(nets.g(x)), 0)\n"

INVALID = {
    "summed-here": ("", TERMS + "        loss = real + fake\n        print(real.item())  # flag"),
    "display-unpacked": ("", TERMS + "        loss, n = real + fake, 3\n        print(fake.item())  # flag"),
    "tensor-methods": ("", TERMS + "        total = real.add(fake).sum()\n        loss = total.div(x.size(0))\n        print(float(fake))  # flag"),
    "helper-tuple": (
        "def compute(nets, x):\n    real = adv_loss(nets.d(x), 1)\n    fake = adv_loss(nets.d(nets.g(x)), 0)\n"
        "    return real + fake, dict(real=real.item())  # flag",
        "        loss, parts = compute(nets, x)",
    ),
    "helper-value": (
        "def compute(nets, x):\n    real = adv_loss(nets.d(x), 1)\n    total = real + adv_loss(nets.d(nets.g(x)), 0)\n"
        "    print(real.item())  # flag\n    return total",
        "        loss = compute(nets, x)",
    ),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_a_term_of_the_backpropagated_loss_is_a_device_tensor(name):
    helpers, body = INVALID[name]
    assert _marked(helpers, body) == [("TSL101", "flag")]


VALID = {
    "python-number-term": ("", TERMS + "        reg = 0\n        loss = real + fake + reg\n        print(float(reg))  # clean"),
    "other-element": (
        "def compute(nets, x, stats):\n    real = adv_loss(nets.d(x), 1)\n    return real, stats\n",
        "        loss, stats = compute(nets, x, fetcher.stats)\n        print(stats.item())  # clean",
    ),
    "two-names-multiplied": ("", TERMS + "        w = fetcher.weight\n        loss = w * real\n        print(w.item())  # clean"),
    "mul-by-a-name": ("", TERMS + "        w = fetcher.weight\n        loss = real.mul(w)\n        print(w.item())  # clean"),
}


@pytest.mark.parametrize("name", list(VALID))
def test_what_is_not_a_term_of_the_graph_stays_unknown(name):
    helpers, body = VALID[name]
    assert _marked(helpers, body) == []


def test_no_accelerator_no_evidence():
    helpers, body = INVALID["summed-here"]
    assert _marked(helpers, body.replace("# flag", "# clean"), place="pass") == []
