"""Trainer frameworks whose base class owns the training loop and calls a subclass's methods
(and its callbacks' hooks) once per batch, as Lightning does with its hooks (lightning.py).

Read from pytorch-accelerated 0.1.x (`pytorch_accelerated/trainer.py`, `callbacks.py`): the
Trainer's `_run_train_epoch` calls `calculate_train_batch_loss(batch)`, `backward_step(loss)`,
`optimizer_step()`, `scheduler_step()` and `optimizer_zero_grad()` for every batch, and
`_run_eval_epoch` calls `calculate_eval_batch_loss(batch)`; batches come from loaders it builds
from the datasets given to `train()`/`evaluate()` and hands to accelerate's `prepare`, so they
arrive on the device. Callbacks get `on_train_step_end(trainer, batch, batch_output)` and
`on_eval_step_end(...)` after every batch.

Each entry: base classes (canonical qualnames) -> {hook: positions (counting `self`) of the
parameters that hold device values}.
"""

from __future__ import annotations

from torchsync_lint.knowledge import transformers

_ACCELERATED_TRAINERS = frozenset({"pytorch_accelerated.Trainer", "pytorch_accelerated.trainer.Trainer"})
_ACCELERATED_CALLBACKS = frozenset({"pytorch_accelerated.callbacks.TrainerCallback", "pytorch_accelerated.TrainerCallback"})

HOOKS: tuple[tuple[frozenset[str], dict[str, tuple[int, ...]]], ...] = (
    (transformers.TRAINERS, transformers.TRAINER_HOOKS),  # HF Trainer (knowledge/transformers.py)
    (transformers.CALLBACKS, transformers.CALLBACK_HOOKS),
    (
        _ACCELERATED_TRAINERS,
        {
            "calculate_train_batch_loss": (1,),
            "calculate_eval_batch_loss": (1,),
            "backward_step": (),  # its loss is whatever the subclass's calculate_*_batch_loss returned
            "optimizer_step": (),
            "scheduler_step": (),
            "optimizer_zero_grad": (),
        },
    ),
    (
        _ACCELERATED_CALLBACKS,
        {
            "on_train_step_start": (),
            "on_train_step_end": (2,),  # the batch; batch_output is what the trainer returned
            "on_eval_step_start": (),
            "on_eval_step_end": (2,),
        },
    ),
)

# Methods of those trainers that build DataLoaders from the datasets they are given (keywords,
# and positions counting from the first argument after `self`) and move every batch to the
# device: the datasets' transforms run on the host for a device run.
DATASET_CONSUMERS: dict[str, dict[str, int]] = {
    "train": {"train_dataset": 0, "eval_dataset": 1},
    "evaluate": {"dataset": 0},
}
TRAINER_BASES = _ACCELERATED_TRAINERS

# Engines that run a function they are given once per batch: pytorch-ignite's
# `Engine(process_function)` calls `process_function(engine, batch)` for every batch of the
# loader given to `engine.run(loader)` (read from ignite 0.4 `ignite/engine/engine.py`), batches
# as the loader yields them (ignite moves nothing: the function copies them itself).
# Qualname -> (position of the function among the call's arguments, position of its batch
# parameter).
BATCH_FUNCTION_RUNNERS: dict[str, tuple[int, int]] = {
    "ignite.engine.Engine": (0, 1),
    "ignite.engine.engine.Engine": (0, 1),
    "ignite.engine.DeterministicEngine": (0, 1),
    "ignite.engine.deterministic.DeterministicEngine": (0, 1),
}
