"""Lightning (lightning / pytorch_lightning): modules, hooks, Fabric.

Imports are canonicalised first (analysis/imports.py: `pytorch_lightning.` and
`lightning.pytorch.` become `lightning.`), so one name covers every import path.
"""

from __future__ import annotations

LIGHTNING_MODULES = frozenset({"lightning.LightningModule", "lightning.fabric.LightningModule"})
DATA_MODULES = frozenset({"lightning.LightningDataModule"})
TRAINERS = frozenset({"lightning.Trainer"})
# Where Lightning's logger classes live (`Trainer(logger=TensorBoardLogger(...))` has a logger).
LOGGER_MODULES = ("lightning.loggers.", "lightning.fabric.loggers.")
FABRICS = frozenset({"lightning.Fabric", "lightning.fabric.Fabric"})

# Hooks Lightning calls once per batch, and the parameters (after `self`) that hold device
# values: it moves the batch to the module's device first, and step outputs are device tensors.
BATCH_HOOK_PARAMS: dict[str, tuple[int, ...]] = {
    "training_step": (0,),
    "validation_step": (0,),
    "test_step": (0,),
    "predict_step": (0,),
    "on_train_batch_start": (0,),
    "on_train_batch_end": (0, 1),
    "on_validation_batch_start": (0,),
    "on_validation_batch_end": (0, 1),
    "on_test_batch_start": (0,),
    "on_test_batch_end": (0, 1),
    "on_predict_batch_end": (0, 1),
    # Lightning 1.x: the step's outputs, once per batch
    "training_step_end": (0,),
    "validation_step_end": (0,),
    "test_step_end": (0,),
    # once per optimisation step, around backward and the optimizer
    "on_before_backward": (0,),
    "on_after_backward": (),
    "on_before_optimizer_step": (),
    "on_before_zero_grad": (),
}
BATCH_HOOKS = frozenset(BATCH_HOOK_PARAMS)
# The trainers' own count of optimizer steps (`self.global_step` of a LightningModule,
# `trainer.global_step`, HF `state.global_step`): `if self.global_step == 0:` runs once.
STEP_COUNTERS = frozenset({"global_step"})
# Hooks whose returned DataLoaders Lightning iterates (and moves to the device).
LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})
# Trainer methods that take a module and loaders and run them on the accelerator.
TRAINER_METHODS = frozenset({"fit", "validate", "test", "predict"})

# Fabric: `fabric.setup(model, opt)` returns the model (and optimizers) on the device;
# `fabric.setup_dataloaders(*loaders)` returns loaders whose batches arrive on the device.
FABRIC_SETUP = frozenset({"setup", "setup_module"})
FABRIC_SETUP_LOADERS = frozenset({"setup_dataloaders"})
# `setup_dataloaders(..., move_to_device=False)` leaves the batches on the host.
NO_MOVE_KEYWORDS = frozenset({"move_to_device"})

# Callbacks: their per-batch hooks run every step, with the step's outputs and the batch (on
# the device) after `self, trainer, pl_module`; a prediction writer's `write_on_batch_end` too
# (with write_interval="batch").
CALLBACK_BASES = frozenset({"lightning.Callback", "lightning.callbacks.Callback", "lightning.callbacks.BasePredictionWriter", "lightning.fabric.Callback"})
CALLBACK_HOOK_PARAMS: dict[str, tuple[int, ...]] = {
    "on_train_batch_start": (3,),
    "on_train_batch_end": (3, 4),
    "on_validation_batch_start": (3,),
    "on_validation_batch_end": (3, 4),
    "on_test_batch_start": (3,),
    "on_test_batch_end": (3, 4),
    "on_predict_batch_start": (3,),
    "on_predict_batch_end": (3, 4),
    "on_before_backward": (3,),
    "on_after_backward": (),
    "on_before_optimizer_step": (),
    "write_on_batch_end": (3, 5),
}
