"""Stand-in ``torchvision.transforms`` (v1 API); the classes live in ``.transforms`` as in torchvision."""

from torchvision.transforms.transforms import Compose, Normalize, ToTensor

__all__ = ["Compose", "Normalize", "ToTensor"]
