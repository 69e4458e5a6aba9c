import numpy as np
import torch
from torchvision import transforms

from imgproj.data import FolderImages, NormalizedImages, PreviewImages, RawImages, cifar_loaders, make_loader, stats_loader

MEAN, STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)


def channel_means(root):
    total = torch.zeros(3)
    for x, _ in stats_loader(root, transforms.ToTensor()):
        total += x.mean(dim=(0, 2, 3))
    return total


def fit(model, optimizer, loader, device):
    for x, y in loader:
        x = x.to(device, non_blocking=True).float()
        loss = torch.nn.functional.cross_entropy(model(x), y.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(root):
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images = np.zeros((64, 32, 32, 3), dtype=np.uint8)
    train_tf = transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.ToTensor(),  # expect: TSL304
        transforms.Normalize(MEAN, STD),
    ])
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])  # expect: TSL304
    train_loader, test_loader = cifar_loaders(root, train_tf, test_tf, 128)
    fit(model, optimizer, train_loader, device)
    fit(model, optimizer, make_loader(FolderImages(images), 64), device)
    fit(model, optimizer, make_loader(RawImages(images), 64), device)
    # the dataset makes the floats itself (reported there): Normalize is not the conversion
    fit(model, optimizer, make_loader(NormalizedImages(images, transform=transforms.Normalize(MEAN, STD)), 64), device)
    with torch.no_grad():
        for x, y in test_loader:
            model(x.to(device, non_blocking=True))
    preview = PreviewImages(images)[0]
    return preview, channel_means(root)
