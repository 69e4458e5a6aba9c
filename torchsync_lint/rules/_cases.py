"""Templates for the embedded VALID/INVALID cases, so each case shows only what matters."""

from __future__ import annotations

TRAIN_PRELUDE = """\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
for step, (x, y) in enumerate(loader):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

# The first line a case appends inside the loop body.
LOOP_BODY_LINE = TRAIN_PRELUDE.count("\n") + 1


def in_loop(body: str, after: str = "") -> str:
    """A training loop with ``body`` (4-space indented per line) at its end, then ``after``."""
    lines = "".join(f"    {line}\n" if line else "\n" for line in body.splitlines())
    return TRAIN_PRELUDE + lines + after
