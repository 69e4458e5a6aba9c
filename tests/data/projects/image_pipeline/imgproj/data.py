"""Datasets and loader builders; the loops that copy the batches to the GPU are in train.py."""
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import datasets

from imgproj.preprocess import crop_box, scale_image


class FolderImages(Dataset):
    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return scale_image(self.images[i]), 0


class RawImages(Dataset):
    """uint8 out: normalised on the device by the training loop."""

    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.from_numpy(crop_box(self.images[i], (0, 0, 8, 8))), 0


class NormalizedImages(Dataset):
    def __init__(self, images, transform=None):
        self.images = images
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = torch.from_numpy(self.images[i]).float() / 255.0  # expect: TSL304
        if self.transform is not None:
            img = self.transform(img)
        return img, 0


class PreviewImages(Dataset):
    """Only shown in a preview grid: no loader reads it."""

    def __init__(self, images):
        self.images = images

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]).float() / 255


def cifar_loaders(root, train_transform, test_transform, batch_size):
    train = datasets.CIFAR10(root, train=True, transform=train_transform)
    test = datasets.CIFAR10(root, train=False, transform=test_transform)
    return (
        DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=4, pin_memory=True),
        DataLoader(test, batch_size=batch_size, num_workers=4, pin_memory=True),
    )


def make_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, num_workers=4, pin_memory=True)


def stats_loader(root, transform):
    """For the channel means, computed on the CPU."""
    return DataLoader(datasets.CIFAR10(root, transform=transform), batch_size=512, num_workers=4)
