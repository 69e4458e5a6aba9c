"""A statement that binds a name on every path through it (`if/else` both assigning,
`try:` / `except StopIteration:` both assigning: the loader restart idiom of GAN code) kills
the bindings before it, as a plain assignment does; one with a path that keeps the old value
(`except StopIteration: pass`, an `if` without `else`) does not. And `next(it)` of a name bound to
`iter(loader)` in several places (before the loop and again in the handler) is a batch."""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

HEAD = '''\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)
it = iter(loader)
for step in range(1000):
{fetch}
    kept = x[x > 0]
    x = x.to(device, non_blocking=True)
    loss = model(x).sum()
    loss.backward()
    opt.step()
'''

EVERY_PATH = {
    "try/except StopIteration": "    try:\n        x = next(it)\n    except StopIteration:\n        it = iter(loader)\n        x = next(it)",
    "bare except, unpacking": "    try:\n        x, = next(it)\n    except:\n        it = iter(loader)\n        x, = next(it)",
    "if/else": "    if step % 100 == 0:\n        it = iter(loader)\n        x = next(it)\n    else:\n        x = next(it)",
    "if/elif/else": "    if step == 0:\n        x = next(it)\n    elif step % 100 == 0:\n        it = iter(loader)\n        x = next(it)\n    else:\n        x = next(it)",
    "a handler that re-raises": "    try:\n        x = next(it)\n    except StopIteration:\n        raise",
}

KEEPS_OLD = {
    "except: pass": "    try:\n        x = next(it)\n    except StopIteration:\n        pass",
    "if without else": "    if step % 2 == 0:\n        x = next(it)",
}


def _codes(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_text(source, "train.py", Config())]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("fetch", list(EVERY_PATH.values()), ids=list(EVERY_PATH))
def test_a_batch_fetched_on_every_path_is_the_host_batch(fetch):
    source = HEAD.format(fetch=fetch)
    # `x[x > 0]` indexes this step's host batch: the previous step's device copy does not reach it
    assert (_line(source, "kept = x[x > 0]"), "TSL105") not in _codes(source)


@pytest.mark.parametrize("fetch", list(KEEPS_OLD.values()), ids=list(KEEPS_OLD))
def test_a_path_keeping_the_old_value_keeps_the_device_copy(fetch):
    source = HEAD.format(fetch=fetch)
    # on the path that fetched nothing, `x` is last step's device copy: a device boolean mask
    assert (_line(source, "kept = x[x > 0]"), "TSL105") in _codes(source)


@pytest.mark.parametrize("handler", ["except StopIteration:", "except:", "except Exception:"])
def test_next_of_an_iterator_restarted_in_the_handler_is_a_batch(handler):
    source = HEAD.replace("    kept = x[x > 0]\n", "").replace("x.to(device, non_blocking=True)", "x.to(device)").format(
        fetch=f"    try:\n        x = next(it)\n    {handler}\n        it = iter(loader)\n        x = next(it)"
    )
    assert (_line(source, "x = x.to(device)"), "TSL301") in _codes(source)
