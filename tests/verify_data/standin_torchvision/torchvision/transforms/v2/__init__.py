"""Stand-in ``torchvision.transforms.v2``: nn.Module transforms; images are ``tv_tensors.Image``
and each kernel runs on the unwrapped tensor, its result wrapped again, as in torchvision."""

import numpy as np
import torch

from torchvision import tv_tensors


def _call_kernel(kernel, image, *args):
    """torchvision's ``_kernel_tv_tensor_wrapper``: unwrap, run, wrap like the input."""
    if isinstance(image, tv_tensors.TVTensor):
        return tv_tensors.wrap(kernel(image.as_subclass(torch.Tensor), *args), like=image)
    return kernel(image, *args)


class Transform(torch.nn.Module):
    pass


class Compose(Transform):
    def __init__(self, transforms):
        super().__init__()
        self.transforms = transforms

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        for transform in self.transforms:
            sample = transform(sample)
        return sample


class ToImage(Transform):
    """HWC ndarray -> CHW ``tv_tensors.Image`` of the same dtype (uint8 stays uint8)."""

    def forward(self, pic):
        if isinstance(pic, torch.Tensor):
            return pic.as_subclass(tv_tensors.Image)
        if pic.ndim == 2:
            pic = pic[:, :, None]
        return torch.from_numpy(np.ascontiguousarray(pic.transpose((2, 0, 1)))).as_subclass(tv_tensors.Image)


class PILToTensor(ToImage):
    pass


class ToDtype(Transform):
    def __init__(self, dtype, scale=False):
        super().__init__()
        self.dtype = dtype
        self.scale = scale

    def forward(self, image):
        return _call_kernel(self._to_dtype, image)

    def _to_dtype(self, image):
        if image.dtype == self.dtype:
            return image
        if not self.scale or image.is_floating_point() or not self.dtype.is_floating_point:
            return image.to(self.dtype)
        return image.to(self.dtype).mul_(1.0 / 255)


class Normalize(Transform):
    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)
        self.inplace = inplace

    def forward(self, image):
        return _call_kernel(self._normalize, image)

    def _normalize(self, image):
        if not image.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
        if not self.inplace:
            image = image.clone()
        mean = torch.as_tensor(self.mean, dtype=image.dtype, device=image.device).view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=image.dtype, device=image.device).view(-1, 1, 1)
        return image.sub_(mean).div_(std)


__all__ = ["Compose", "Normalize", "PILToTensor", "ToDtype", "ToImage", "Transform"]
