"""Stand-in ``torchvision.tv_tensors``: as in torchvision, an ``Image`` is a tensor subclass whose
ops return plain tensors, and a v2 kernel runs on ``image.as_subclass(torch.Tensor)`` and wraps
its result back with ``output.as_subclass(type(image))``: new tensor objects (aliases of the same
storage) on each side of every kernel."""

import torch
from torch._C import DisableTorchFunctionSubclass


class TVTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class Image(TVTensor):
    pass


def wrap(output, like):
    return output.as_subclass(type(like))


__all__ = ["Image", "TVTensor", "wrap"]
