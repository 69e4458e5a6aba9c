"""A training loop with metrics, so that each TSL2xx case shows only the lines that matter."""

from __future__ import annotations

from torchsync_lint.types import Invalid, Valid

METRIC_PRELUDE = """\
import torch
import torch.nn.functional as F
from torchmetrics import MeanMetric, SumMetric, MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""

LOOP = """\
for step in range(100):
    x = torch.randn(32, 8, device=device)
    y = torch.randint(0, 4, (32,), device=device)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def metric_case(setup: str, body: str, after: str = "", header: str = "") -> str:
    """Prelude + ``setup`` (module level) + the loop with ``body`` (indented) + ``after``."""
    lines = "".join(f"    {line}\n" if line else "\n" for line in body.splitlines())
    return header + METRIC_PRELUDE + setup.rstrip("\n") + "\n" + LOOP + lines + after


# Cases where the metric reaches the update as a function parameter.
RECORD = "def record(metric, value):\n    metric.update(value)\n\n"
_EPOCH = """\
def train_epoch(loader, metrics):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {update}

"""


def epoch_case(update: str, setup: str, call: str = "train_epoch(loader, metrics)") -> str:
    """An epoch function that updates its ``metrics`` parameter per batch, then ``setup`` and
    the epoch loop that calls it (omit ``call`` for a function that is never called)."""
    loop = f"for epoch in range(10):\n    {call}\n" if call else ""
    return METRIC_PRELUDE + _EPOCH.replace("{update}", update) + setup + "\n" + loop


def line_of(code: str, text: str) -> int:
    """1-based line of the first occurrence of ``text`` (cases pin lines by content, not numbers)."""
    for number, line in enumerate(code.splitlines(), 1):
        if text in line:
            return number
    raise ValueError(f"{text!r} not in case")


def bad(code: str, at: str, **kwargs) -> Invalid:
    return Invalid(code, line=line_of(code, at), **kwargs)


def ok(code: str, **kwargs) -> Valid:
    return Valid(code, **kwargs)
