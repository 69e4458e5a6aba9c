"""Hugging Face accelerate: what an `Accelerator` hands back (read from accelerate 1.x source).

`prepare(...)` returns its arguments in order, each placed for the run: modules on the device
(`prepare_model` moves them), DataLoaders wrapped so that every batch arrives on the device
(`DataLoaderShard` calls `send_to_device` on each batch), optimizers wrapped.
"""

from __future__ import annotations

ACCELERATOR = "accelerate.Accelerator"

CALLS = {ACCELERATOR: "object"}
METHODS = {
    (ACCELERATOR, "prepare"): "prepared",
    (ACCELERATOR, "prepare_model"): "model",
    (ACCELERATOR, "prepare_data_loader"): "device-loader",
    (ACCELERATOR, "prepare_optimizer"): "optimizer",
    (ACCELERATOR, "prepare_scheduler"): "object",
    (ACCELERATOR, "unwrap_model"): "same",
    (ACCELERATOR, "skip_first_batches"): "same",
    (ACCELERATOR, "gather"): "device",
    (ACCELERATOR, "gather_for_metrics"): "device",
    (ACCELERATOR, "reduce"): "device",
    (ACCELERATOR, "pad_across_processes"): "device",
}
ATTRIBUTES = {
    (ACCELERATOR, "device"): "accelerator-device",
    (ACCELERATOR, "is_main_process"): "host",
    (ACCELERATOR, "num_processes"): "host",
    (ACCELERATOR, "process_index"): "host",
}
# `accelerator.backward(loss)` is the backward pass of a training step.
STEP_METHODS = frozenset({(ACCELERATOR, "backward")})
CANONICAL_PREFIXES = (("accelerate.accelerator.", "accelerate."),)
