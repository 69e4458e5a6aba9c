"""Code after a statement that always leaves its block (`continue`, `break`, `return`, `raise`)
never runs, so a host sync there is no per-step sync: a left-over body after a `continue` that
disabled it (`elif kind == 'region': continue; if self.loss: ...`), a debug print after an early
`return`, in a loop body, in a branch of it and in a step function the loop calls.

VALID near-misses: the same statements before the jump, a jump inside a nested `if` (only that
branch leaves), and a jump in another branch of the `if`."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

PRELUDE = '''import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step_fn(x):
    loss = model(x).sum()
    loss.backward()
    opt.step()
{helper}

for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).sum()
    loss.backward()
    opt.step()
{body}
'''


def _marked(helper: str, body: str) -> list[tuple[str, str]]:
    source = PRELUDE.format(helper=helper, body=body)
    return marked_findings(source)


@pytest.mark.parametrize("body", [
    # a branch disabled by `continue` left its old body in place
    "    if step % 2 == 1:\n        continue\n        print(loss.item())  # clean",
    # the loop body itself after an unconditional continue
    "    continue\n    print(loss.item())  # clean",
    # after a raise (a not-implemented branch)
    "    if step > 1000:\n        raise RuntimeError('unreachable')\n        print(loss.item())  # clean",
    # after a break on the same line as other statements
    "    if step > 50:\n        x = None; break\n        if loss:  # clean\n            pass",
], ids=["after-continue-in-branch", "after-continue-in-loop", "after-raise", "after-break"])
def test_code_after_a_jump_in_its_block_is_not_per_step(body):
    assert _marked("", body) == []


def test_a_step_function_code_after_return_is_not_per_step():
    helper = "    return loss\n    print(loss.item())  # clean\n"
    body = "    step_fn(x)"
    assert _marked(helper, body) == []


@pytest.mark.parametrize("body", [
    # the read before the jump runs every step
    "    print(loss.item())  # flag\n    continue",
    # the jump is inside a nested if: the statement after that if still runs
    "    if step % 2 == 1:\n        continue\n    print(loss.item())  # flag",
    # a jump in the other branch leaves only that branch
    "    if step > 1000:\n        break\n    else:\n        print(loss.item())  # flag",
], ids=["before-the-jump", "after-a-nested-jump", "jump-in-other-branch"])
def test_code_the_jump_does_not_skip_stays_per_step(body):
    assert _marked("", body) == [("TSL101", "flag")]


def test_a_step_function_code_before_return_stays_per_step():
    helper = "    print(loss.item())  # flag\n    return loss\n"
    body = "    step_fn(x)"
    assert _marked(helper, body) == [("TSL101", "flag")]
