"""Hugging Face evaluate: `metric.add_batch(predictions=..., references=...)` converts its
arguments to Python/numpy values on the host right away (evaluate's `Metric.add_batch` writes
them to an Arrow table), so device tensors handed to it are read back every call."""

from __future__ import annotations

CALLS = {"evaluate.load": "object"}
# Methods that read their arguments on the host: a sync per call for device tensors.
HOST_READING_METHODS = frozenset({("evaluate.load", "add_batch"), ("evaluate.load", "add")})
METHODS = {("evaluate.load", "compute"): "host"}
