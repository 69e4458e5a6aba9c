"""Helpers the datasets call per item."""
import torch


def scale_image(img):
    return torch.from_numpy(img).permute(2, 0, 1).float() / 255  # expect: TSL304


def crop_box(img, box):
    x0, y0, x1, y1 = box
    return img[y0:y1, x0:x1]
