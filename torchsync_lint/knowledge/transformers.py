"""Hugging Face transformers (and diffusers/timm/torchvision model factories): models come
from `from_pretrained`/factory calls on the CPU unless told otherwise (`device_map=...`)."""

from __future__ import annotations

# `transformers.<Class>.from_pretrained(...)`: a model when the class name says it is one.
MODEL_CLASS_WORDS = ("Model", "For", "Encoder", "Decoder", "Transformer", "Net")
NON_MODEL_CLASS_WORDS = ("Tokenizer", "Processor", "Config", "FeatureExtractor", "ImageProcessor", "Scheduler", "Pipeline")
MODEL_FACTORY_METHODS = frozenset({"from_pretrained", "from_config", "from_single_file"})
MODEL_LIBRARIES = ("transformers.", "diffusers.", "peft.")
# Plain model factories.
CALLS = {
    "timm.create_model": "cpu-model",
}
CALL_PREFIXES = (("torchvision.models.", "cpu-model"),)
# A keyword that places the model on a device when it is created.
PLACING_KEYWORDS = frozenset({"device_map", "device"})

# -- Trainer: the loop, its loaders and its hooks --------------------------------------------------
# Read from transformers 5.23.0 (`trainer.py`, `training_args.py`, `trainer_callback.py`).
# `Trainer(model, args, data_collator, train_dataset, eval_dataset, ...)` builds its DataLoaders
# itself (`get_train_dataloader` / `get_eval_dataloader`) with `num_workers` and `pin_memory`
# from `TrainingArguments`; `args=None` means `TrainingArguments(output_dir="tmp_trainer")`, the
# defaults. It runs on the accelerator unless told `use_cpu=True` (`no_cuda=True` before 5.0).
TRAINERS = frozenset({
    "transformers.Trainer",
    "transformers.trainer.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer",
})
TRAINING_ARGUMENTS = frozenset({
    "transformers.TrainingArguments",
    "transformers.training_args.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
})
# The Trainer's parameters: keyword -> position among the call's arguments.
TRAINER_ARGS = ("args", 1)
TRAINER_DATASETS = (("train_dataset", 3), ("eval_dataset", 4))
# The DataLoader settings TrainingArguments carries: DataLoader keyword -> (its argument there,
# the default in transformers 5.23.0). (4.2.x, which some projects pin, had no
# `dataloader_pin_memory` and pinned nothing; the workers default was 0 there too.)
LOADER_SETTINGS = {"num_workers": ("dataloader_num_workers", 0), "pin_memory": ("dataloader_pin_memory", True)}
# `TrainingArguments(use_cpu=True)`: a CPU run.
CPU_SETTINGS = frozenset({"use_cpu", "no_cuda"})
# A subclass that builds its own loaders: its settings are its own.
LOADER_METHODS = frozenset({"get_train_dataloader", "get_eval_dataloader", "get_test_dataloader"})
# Methods the Trainer calls once per batch, with the positions (counting `self`) of their
# parameters that hold device values: `training_step` moves the inputs to the device
# (`_prepare_inputs`) before it calls `compute_loss(model, inputs)`. `training_step` and
# `prediction_step` themselves receive the batch as the loader yields it, which versions move
# at different points: no parameter of theirs is known to be on the device.
TRAINER_HOOKS: dict[str, tuple[int, ...]] = {"compute_loss": (2,), "training_step": (), "prediction_step": ()}
# Callbacks: called every optimisation step (`on_step_end`) or gradient-accumulation substep.
CALLBACKS = frozenset({"transformers.TrainerCallback", "transformers.trainer_callback.TrainerCallback"})
CALLBACK_HOOKS: dict[str, tuple[int, ...]] = {"on_step_begin": (), "on_step_end": (), "on_substep_end": (), "on_pre_optimizer_step": (), "on_optimizer_step": ()}
