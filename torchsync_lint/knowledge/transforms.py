"""Image transforms (torchvision, timm) that turn uint8 images into float on the host (TSL304).

Imports are canonicalised first (analysis/imports.py), so `from torchvision import transforms
as T; T.ToTensor()` is `torchvision.transforms.ToTensor`.
"""

from __future__ import annotations

# Always float32 in [0, 1] from a PIL image or a uint8 array.
CONVERTERS = frozenset(
    {
        "torchvision.transforms.ToTensor",
        "torchvision.transforms.v2.ToTensor",
        "torchvision.transforms.functional.to_tensor",
        "torchvision.transforms.v2.functional.to_tensor",
    }
)
# Float only when the dtype argument is a wide float (`ConvertImageDtype(torch.float)`).
DTYPE_CONVERTERS = frozenset(
    {
        "torchvision.transforms.ConvertImageDtype",
        "torchvision.transforms.v2.ConvertImageDtype",
        "torchvision.transforms.v2.ToDtype",
        "torchvision.transforms.functional.convert_image_dtype",
        "torchvision.transforms.v2.functional.to_dtype",
        "torchvision.transforms.v2.functional.convert_image_dtype",
    }
)
# The functional forms take the image first, the dtype second.
DTYPE_FUNCTIONAL_SUFFIXES = ("functional.to_dtype", "functional.convert_image_dtype")
WIDE_FLOATS = frozenset({"float32", "float", "float64", "double"})
# Needs float input: the only float step of a pipeline whose dataset already made floats.
NORMALIZE = frozenset(
    {
        "torchvision.transforms.Normalize",
        "torchvision.transforms.v2.Normalize",
        "torchvision.transforms.functional.normalize",
        "torchvision.transforms.v2.functional.normalize",
    }
)
# timm's transform factory: every pipeline it builds ends in ToTensor (MaybeToTensor) and
# Normalize on the host, unless `use_prefetcher=True`, which leaves uint8 for timm's own
# device-side prefetcher (timm/data/transforms_factory.py).
PIPELINE_FACTORIES: dict[str, str] = {
    "timm.data.create_transform": "use_prefetcher",
    "timm.data.transforms_factory.create_transform": "use_prefetcher",
}
# Back to a PIL image: a float tensor made before one of these (in the same function) is not what
# the dataset returns (ssd-style `to_tensor` -> crop -> `to_pil_image` -> resize -> `to_tensor`).
TO_PIL = frozenset(
    {
        "torchvision.transforms.functional.to_pil_image",
        "torchvision.transforms.v2.functional.to_pil_image",
        "torchvision.transforms.ToPILImage",
        "torchvision.transforms.v2.ToPILImage",
    }
)
# `x / 255`, `x.div_(255.)`, and the [-1, 1] form `x / 127.5 - 1`.
PIXEL_SCALES = (255, 127.5)
