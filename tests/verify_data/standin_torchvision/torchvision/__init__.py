"""Test stand-in for torchvision (see ../README.md); not the real package."""

from torchvision import datasets, transforms, tv_tensors

__version__ = "0.0.0+torchsync-standin"
__all__ = ["datasets", "transforms", "tv_tensors"]
