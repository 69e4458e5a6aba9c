"""A synthetic classification data set, described by a small text file."""

from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset


def read_shape(path):
    line = next(ln for ln in Path(path).read_text().splitlines() if ln.strip() and not ln.startswith("#"))
    samples, features, classes = (int(v) for v in line.split())
    return samples, features, classes


def make_loader(path, batch_size):
    samples, features, classes = read_shape(path)
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)
    targets = torch.randint(0, classes, (samples,), generator=generator)
    return DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, shuffle=True, num_workers=2, pin_memory=True)
