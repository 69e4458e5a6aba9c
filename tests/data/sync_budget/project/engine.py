"""The training loop: one step per batch, the per-step bookkeeping in step_helpers."""
from dataclasses import dataclass
from typing import Any

import torch

import step_helpers


@dataclass
class Context:
    device: torch.device
    log_every: int
    accuracy: Any
    writer: Any = None
    step: int = 0
    running: Any = None


def train_one_epoch(model, loader, optimizer, context):
    for features, labels in loader:
        features = features.to(context.device, non_blocking=True)
        labels = labels.to(context.device, non_blocking=True)
        logits = model(features)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        context.step += 1
        step_helpers.after_step(context, loss.detach(), logits.detach(), labels)
