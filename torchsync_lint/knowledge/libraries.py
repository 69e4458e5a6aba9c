"""Top-level names of libraries: an import rooted at one of them never names a module of the
project being linted, so the project view has nothing to say about it (and is not asked)."""

from __future__ import annotations

LIBRARY_ROOTS = frozenset(
    "torch numpy np math os sys time json re logging random collections itertools functools typing dataclasses "
    "argparse pathlib shutil glob copy pickle warnings datetime tqdm wandb accelerate lightning pytorch_lightning "
    "transformers torchvision torchmetrics PIL cv2 scipy sklearn pandas matplotlib yaml omegaconf hydra timm "
    "einops tensorboardX subprocess contextlib abc enum inspect traceback io csv gc".split()
)

# `@BACKBONES.register("resnet")` / `@MODELS.register_module()`: a class or function put into a
# registry (a dict-like object of the project or of mmcv/detectron2-style code), later picked by
# the config with `BACKBONES[cfg.name](cfg)`.
REGISTRY_DECORATOR_METHODS = frozenset({"register", "register_module"})
