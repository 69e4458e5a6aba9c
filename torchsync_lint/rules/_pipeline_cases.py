"""Templates for the TSL3xx embedded cases: a GPU training script with a chosen loader and copy."""

from __future__ import annotations

_GPU = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
_TEMPLATE = """\
import torch
import torch.nn.functional as F
{imports}

device = {device}
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = {loader}
for x, y in loader:
    {copy}
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
{after}"""
LOADER_LINE = 8
COPY_LINE = 10
_PINNED = "DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)"
_ON_CUDA = 'device.type == "cuda"'  # TSL302's fix where the loop copies to `device = torch.device(...)`
_GPU_STRING = '"cuda" if torch.cuda.is_available() else "cpu"'  # a string device: no `.type`
_NB_COPY = "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)"


def pipeline(
    copy: str = _NB_COPY,
    loader: str = _PINNED,
    imports: str = "from torch.utils.data import DataLoader",
    device: str = _GPU,
    after: str = "",
) -> str:
    """A one-file training script; the loader is on line 8 and the batch copy on line 10."""
    return _TEMPLATE.format(imports=imports, device=device, loader=loader, copy=copy, after=after)


_DATASET_CLASS = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Conv2d(3, 8, 3).to(device)


class Images(Dataset):
    def __init__(self, n):
        self.images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        {getitem}


loader = DataLoader(Images(64), batch_size=8, num_workers=2, pin_memory=True)
for x in loader:
    {copy}
    model(x).sum().backward()
"""
GETITEM_LINE = 16


def dataset_script(getitem: str, copy: str = "x = x.to(device, non_blocking=True).float().div_(255)", device_line: str | None = None) -> str:
    src = _DATASET_CLASS.format(getitem=getitem, copy=copy)
    if device_line is not None:
        src = src.replace(f"device = {_GPU}", device_line, 1)
    return src


_TV_SCRIPT = """\
import torch
import torchvision
from torchvision import transforms
from torchvision.transforms import v2
from torch.utils.data import DataLoader

device = {device}
model = torchvision.models.resnet18(num_classes=10).to(device)
transform = transforms.Compose([
    {first},
    transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26)),
])
train_set = torchvision.datasets.CIFAR10("data", train=True, transform=transform)
loader = DataLoader(train_set, batch_size=128, num_workers=4, pin_memory=True)
for x, y in loader:
    {copy}
    model(x).sum().backward()
"""
TRANSFORM_LINE = 10


def torchvision_script(first: str = "transforms.ToTensor()", copy: str = "x = x.to(device, non_blocking=True)", device: str = _GPU) -> str:
    return _TV_SCRIPT.format(first=first, copy=copy, device=device)


# A dataset class that keeps its samples on the device: pinning or worker processes would fail.
DEVICE_DATASET = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 2).to(device)


class OnDevice(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 8).to(device)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


loader = DataLoader(OnDevice(64), batch_size=8)
for x in loader:
    model(x).sum().backward()
"""


# -- helpers -------------------------------------------------------------------------------------
