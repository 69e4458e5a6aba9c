"""Stand-in ``torchvision.datasets.FakeData``: deterministic random images, no download."""

import torch


class FakeData(torch.utils.data.Dataset):
    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None, random_offset=0):
        self.size = size
        self.image_size = image_size
        self.num_classes = num_classes
        self.transform = transform
        self.target_transform = target_transform
        self.random_offset = random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        generator = torch.Generator().manual_seed(index + self.random_offset)
        channels, height, width = self.image_size
        # HWC uint8, as numpy(PIL image) would be; the real FakeData returns the PIL image.
        image = torch.randint(0, 256, (height, width, channels), dtype=torch.uint8, generator=generator).numpy()
        target = int(torch.randint(0, self.num_classes, (1,), generator=generator)[0])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
