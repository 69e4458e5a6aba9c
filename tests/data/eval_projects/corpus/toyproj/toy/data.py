import torch
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(n=256):
    return TensorDataset(torch.randn(n, 8), torch.randint(0, 4, (n,)))


def make_loader(batch_size=32):
    # Defaults: no workers, no pinned memory; train.py copies these batches to the GPU.
    return DataLoader(make_dataset(), batch_size=batch_size, shuffle=True)
