"""TSL101's accumulate fix: offered only when every condition holds, and the fixed code gives
the same value and type at each read (checked by running both versions on CPU)."""

from __future__ import annotations

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.fixer import fix_source

HEAD = """\
import torch

torch.manual_seed(0)
# The accelerator idiom makes the linter treat the model's outputs as device tensors; the
# programs still run (on the CPU here) to compare values before and after the fix.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(N)]
"""

LOOP = """\
for x, y in batches:
    x, y = x.to(device), y.to(device)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def program(init: str, body: str, after: str, head: str = HEAD) -> str:
    inner = "".join(f"    {line}\n" for line in body.splitlines())
    return head + init + "\n" + LOOP + inner + after


def tsl101(source: str):
    return [f for f in lint_source(source, "t.py", {"TSL101"}) if f.code == "TSL101"]


def fixed(source: str) -> str:
    return fix_source(source, "t.py", unsafe=True, lint=tsl101).new_source


NO_FIX = {
    "int-init-float-value": program("total = 0", "total += loss.item()", "print(total)\n"),
    "read-inside-loop": program("total = 0.0", "total += loss.item()\nprint(total)", "print(total)\n"),
    "init-outside-the-loop-block": HEAD
    + "total = 0.0\nfor epoch in range(2):\n"
    + "".join(f"    {line}\n" for line in LOOP.splitlines())
    + "        total += loss.item()\n"
    + "print(total)\n",
    "non-literal-init": program("total = float(0)", "total += loss.item()", "print(total)\n"),
    "rebound-after-loop": program("total = 0.0", "total += loss.item()", "total = 5\nprint(total)\n"),
    "read-before-loop": program("total = 0.0\nprint(total)", "total += loss.item()", "print(total)\n"),
    "scaled-value": program("total = 0.0", "total += loss.item() * 2", "print(total)\n"),
    "minus-equals": program("total = 0.0", "total -= loss.item()", "print(total)\n"),
    "debug-fstring": program("total = 0.0", "total += loss.item()", "print(f'{total=}')\n"),
    "noqa-on-one-accumulation": program("total = 0.0", "total += loss.item()\ntotal += loss.item()  # noqa: TSL101", "print(total)\n"),
    "nested-function-reads-it": program("total = 0.0", "total += loss.item()", "def show():\n    return total\n"),
    "float-shadowed": program("total = 0.0", "total += loss.item()", "print(total)\n", head=HEAD + "def float(v):\n    return v\n"),
    "augmented-after-loop": program("total = 0.0", "total += loss.item()", "total /= N\n"),
    "del-after-loop": program("total = 0.0", "total += loss.item()", "del total\n"),
    "int-init-unknown-value": program("hits = 0", "hits += logits.max().item()", "print(hits)\n"),
}


@pytest.mark.parametrize("source", list(NO_FIX.values()), ids=list(NO_FIX))
def test_flagged_but_no_fix(source):
    found = tsl101(source)
    assert found, "the near-miss must still be a finding"
    assert all(f.fix is None for f in found), [f.fix for f in found]


def test_global_declaration_blocks_the_fix():
    source = "import torch\n\ndef train(model, loader, opt, device):\n    global total\n    total = 0.0\n" + "".join(
        f"    {line}\n" for line in LOOP.replace("batches", "loader").splitlines()
    ) + "        total += loss.item()\n    return total\n"
    found = tsl101(source)
    assert found and all(f.fix is None for f in found)


RUNS = {
    "float-sum": program("total = 0.0", "total += loss.item()", "result = (total, total / max(N, 1))\n"),
    "int-count": program("hits = 0", "hits += (logits.argmax(1) == y).sum().item()", "result = (hits, hits / (5 * N + 1))\n"),
    "bool-any": program("flags = 0", "flags += (logits > 0.5).any().item()", "result = flags\n"),
    "two-accumulations-gated": program(
        "total = 0.0", "total += loss.item()\nif len(y) % 2:\n    total += loss.item()", "result = [total]\n"
    ),
    "inside-function-while": (
        HEAD
        + "def run():\n    it = iter(batches)\n    total = 0.0\n    while True:\n        batch = next(it, None)\n        if batch is None:\n            break\n"
        + "        x, y = batch[0].to(device), batch[1].to(device)\n        loss = model(x).sum()\n        loss.backward()\n        optimizer.step()\n"
        + "        total += loss.item()\n    return total\nresult = run()\n"
    ),
}


def _run(source: str, steps: int):
    namespace: dict = {"N": steps}
    exec(compile(source, "t.py", "exec"), namespace)  # noqa: S102 - our own test programs
    return namespace["result"]


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b  # bit-identical value, identical Python type


@pytest.mark.parametrize("steps", [0, 1, 7])
@pytest.mark.parametrize("source", list(RUNS.values()), ids=list(RUNS))
def test_fixed_code_gives_identical_values_and_types(source, steps):
    pytest.importorskip("torch")
    new = fixed(source)
    assert new != source, "the fix must be offered here"
    assert ".item()" not in new.split("optimizer.step()")[-1].split("result")[0]
    before, after = _run(source, steps), _run(new, steps)
    assert _same(before, after), (before, after)
    assert fixed(new) == new  # idempotent
