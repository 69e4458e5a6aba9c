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
