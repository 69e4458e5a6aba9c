"""TSL304's transform pipelines built in one place and handed to a dataset built in another
(issue 38): returned by a helper of another module, a module-level pipeline imported from
another module, stored on `self` by a base dataset class of another module, set on a dataset
after it is built. The same pipeline is the same value however it travels. Near-misses: the
uint8 pipeline (`PILToTensor`), and the same float pipeline for a loader whose batches never
go to the device. Projects are written to a temporary directory and checked as a tree and
file by file (the answers must agree)."""

from __future__ import annotations

import collections
import textwrap
from pathlib import Path

import pytest

from tests.test_objects import project as lint_project

FLOAT = "T.Compose([T.Resize(64), T.ToTensor(), T.Normalize((0.5,), (0.5,))])"
UINT8 = "T.Compose([T.Resize(64), T.PILToTensor()])"

TRAIN = """\
import torch
from data import make_loader

def train(model, cfg, opt):
    device = torch.device("cuda")
    model = model.to(device)
    loader = make_loader(cfg)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""

# The same project, its batches never copied to the device.
TRAIN_ON_HOST = """\
from data import make_loader

def count(cfg):
    total = 0
    for x, y in make_loader(cfg):
        total += len(y)
    return total
"""


def project(tmp_path: Path, files: dict[str, str], capsys) -> collections.Counter:
    """TSL304 findings of ``files`` linted as one project, whole and each file alone (both
    must agree): (file path, line) -> count."""
    return lint_project(tmp_path, files, capsys, select="TSL304", fields=("line",), relative=True)


def line_of(text: str, snippet: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if snippet in line)


# -- a helper of another module returns the pipeline ----------------------------------------------
TRANSFORMS = """\
import torchvision.transforms as T

def build_transforms(cfg, is_train=True):
    normalize = T.Normalize(mean=cfg.MEAN, std=cfg.STD)
    if is_train:
        transform = T.Compose([T.RandomCrop(cfg.SIZE), T.ToTensor(), normalize])
    else:
        transform = T.Compose([T.Resize(cfg.SIZE), T.ToTensor(), normalize])
    return transform
"""

DATA_WITH_HELPER = """\
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from {module} import build_transforms

def make_loader(cfg):
    train_set = ImageFolder(cfg.ROOT, build_transforms(cfg, is_train=True))
    return DataLoader(train_set, batch_size=32, num_workers=4, pin_memory=True)
"""


@pytest.mark.parametrize(
    ("path", "module", "extra"),
    [
        ("transforms_build.py", "transforms_build", {}),
        ("augmentations/__init__.py", "augmentations", {}),
        ("augmentations/build.py", "augmentations", {"augmentations/__init__.py": "from .build import build_transforms\n"}),  # re-exported
    ],
    ids=["module", "package", "re-exported"],
)
def test_a_pipeline_returned_by_a_helper_of_another_module(tmp_path, capsys, path, module, extra):
    found = project(tmp_path, {"train.py": TRAIN, "data.py": DATA_WITH_HELPER.format(module=module), path: TRANSFORMS, **extra}, capsys)
    assert found == {(path, line_of(TRANSFORMS, "T.RandomCrop(cfg.SIZE), T.ToTensor()")): 1, (path, line_of(TRANSFORMS, "T.Resize(cfg.SIZE), T.ToTensor()")): 1}


def test_a_pipeline_helper_of_another_module_for_a_loader_on_the_host(tmp_path, capsys):
    files = {"train.py": TRAIN_ON_HOST, "data.py": DATA_WITH_HELPER.format(module="transforms_build"), "transforms_build.py": TRANSFORMS}
    assert project(tmp_path, files, capsys) == {}


def test_a_uint8_pipeline_returned_by_a_helper_of_another_module(tmp_path, capsys):
    uint8 = TRANSFORMS.replace("T.ToTensor(), normalize", "T.PILToTensor()")
    files = {"train.py": TRAIN, "data.py": DATA_WITH_HELPER.format(module="transforms_build"), "transforms_build.py": uint8}
    assert project(tmp_path, files, capsys) == {}


# -- a module-level pipeline of another module ------------------------------------------------------
def test_a_module_level_pipeline_imported_from_another_module(tmp_path, capsys):
    pipelines = f"import torchvision.transforms as T\n\nTRAIN_TRANSFORMS = {FLOAT}\nPREVIEW = {UINT8}\n"
    data = """\
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    from pipelines import TRAIN_TRANSFORMS

    def make_loader(cfg):
        return DataLoader(ImageFolder(cfg.ROOT, transform=TRAIN_TRANSFORMS), batch_size=32, num_workers=4, pin_memory=True)
    """
    found = project(tmp_path, {"train.py": TRAIN, "data.py": data, "pipelines.py": pipelines}, capsys)
    assert found == {("pipelines.py", 3): 1}  # the ToTensor of the pipeline the loader reads, not PREVIEW's
    assert project(tmp_path / "host", {"train.py": TRAIN_ON_HOST, "data.py": data, "pipelines.py": pipelines}, capsys) == {}


# -- a base dataset class of another module stores the converter on self ---------------------------
BASE = """\
import numpy as np
from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms

class BaseDataSet(Dataset):
    def __init__(self, root, mean, std):
        self.root = root
        self.files = []
        self.to_tensor = transforms.{converter}()
        self.normalize = transforms.Normalize(mean, std)

    def _load_data(self, index):
        raise NotImplementedError

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        image, label = self._load_data(index)
        image = Image.fromarray(np.uint8(image))
        return self.{call}, label
"""

VOC = """\
import numpy as np
from base_dataset import BaseDataSet

class VOCDataset(BaseDataSet):
    def _load_data(self, index):
        return np.zeros((8, 8, 3), dtype=np.uint8), 0
"""

DATA_WITH_CLASS = """\
from torch.utils.data import DataLoader
from voc import VOCDataset

def make_loader(cfg):
    return DataLoader(VOCDataset(cfg.ROOT, cfg.MEAN, cfg.STD), batch_size=8, num_workers=2, pin_memory=True)
"""


def test_a_converter_stored_on_self_by_a_base_class_of_another_module(tmp_path, capsys):
    base = BASE.format(converter="ToTensor", call="normalize(self.to_tensor(image))")
    found = project(tmp_path, {"train.py": TRAIN, "data.py": DATA_WITH_CLASS, "voc.py": VOC, "base_dataset.py": base}, capsys)
    assert found == {("base_dataset.py", line_of(base, "self.to_tensor = transforms.ToTensor()")): 1}


def test_a_uint8_converter_stored_on_self_by_a_base_class_of_another_module(tmp_path, capsys):
    base = BASE.format(converter="PILToTensor", call="to_tensor(image)").replace("        self.normalize = transforms.Normalize(mean, std)\n", "")
    assert project(tmp_path, {"train.py": TRAIN, "data.py": DATA_WITH_CLASS, "voc.py": VOC, "base_dataset.py": base}, capsys) == {}


def test_a_base_class_converter_for_a_loader_on_the_host(tmp_path, capsys):
    base = BASE.format(converter="ToTensor", call="normalize(self.to_tensor(image))")
    assert project(tmp_path, {"train.py": TRAIN_ON_HOST, "data.py": DATA_WITH_CLASS, "voc.py": VOC, "base_dataset.py": base}, capsys) == {}


# -- a pipeline set on the dataset after it is built ------------------------------------------------
SET_AFTER = """\
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision import datasets

def main(model, root, opt):
    device = torch.device("cuda")
    model = model.to(device)
    train_dataset = datasets.ImageFolder(root)
    preview = datasets.ImageFolder(root)
    train_dataset.transform = {pipeline}
    preview.transform = T.Compose([T.ToTensor()])
    loader = DataLoader(train_dataset, batch_size=32, num_workers=4, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""


def test_a_pipeline_set_on_the_dataset_after_it_is_built(tmp_path, capsys):
    found = project(tmp_path, {"main.py": SET_AFTER.format(pipeline=FLOAT)}, capsys)
    assert found == {("main.py", line_of(SET_AFTER, "train_dataset.transform = ")): 1}  # not the preview's


def test_a_uint8_pipeline_set_on_the_dataset_after_it_is_built(tmp_path, capsys):
    assert project(tmp_path, {"main.py": SET_AFTER.format(pipeline=UINT8)}, capsys) == {}


def test_a_module_level_dataset_of_another_module(tmp_path, capsys):
    datasets = f"import torchvision.transforms as T\nfrom torchvision.datasets import ImageFolder\n\nTRAIN_SET = ImageFolder('data', transform={FLOAT})\nPREVIEW_SET = ImageFolder('data', transform={FLOAT})\n"
    data = """\
    from torch.utils.data import DataLoader
    from datasets_defs import TRAIN_SET

    def make_loader(cfg):
        return DataLoader(TRAIN_SET, batch_size=32, num_workers=4, pin_memory=True)
    """
    found = project(tmp_path, {"train.py": TRAIN, "data.py": data, "datasets_defs.py": datasets}, capsys)
    assert found == {("datasets_defs.py", 4): 1}  # TRAIN_SET's pipeline; no loader reads PREVIEW_SET


PROJECT_TRANSFORMS = """\
import torch
import torchvision.transforms as transforms

class ToTensor:
    def __call__(self, data):
        img, boxes = data
        img = transforms.ToTensor()(img)
        targets = torch.zeros((len(boxes), 6))
        targets[:, 1:] = transforms.ToTensor()(boxes)
        return img, targets

class Flip:
    def __call__(self, data):
        return data

DEFAULT_TRANSFORMS = transforms.Compose([Flip(), ToTensor()])
"""


def test_a_project_transform_class_in_a_module_level_pipeline_of_another_module(tmp_path, capsys):
    """pytorch-yolov3's pipeline: the project's own `ToTensor` step converts the image; what it
    writes into a slice of a tensor it made (the box targets) is that tensor's dtype, not a
    conversion of the sample."""
    data = """\
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    from boxes_transforms import DEFAULT_TRANSFORMS

    def make_loader(cfg):
        return DataLoader(ImageFolder(cfg.ROOT, transform=DEFAULT_TRANSFORMS), batch_size=32, num_workers=4, pin_memory=True)
    """
    found = project(tmp_path, {"train.py": TRAIN, "data.py": data, "boxes_transforms.py": PROJECT_TRANSFORMS}, capsys)
    assert found == {("boxes_transforms.py", line_of(PROJECT_TRANSFORMS, "img = transforms.ToTensor()(img)")): 1}


TRAINER = """\
import torch
from torch.utils.data import DataLoader

class Trainer:
    def __init__(self, model, train_dataset, test_dataset, device):
        self.model = model.to(device)
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.device = device

    def run_epoch(self, opt, is_train):
        data = self.train_dataset if is_train else self.test_dataset
        loader = DataLoader(data, shuffle=True, pin_memory=True, batch_size=32, num_workers=4)
        for x, y in loader:
            x = x.to(self.device, non_blocking=True)
            loss = self.model(x).sum()
            loss.backward()
            opt.step()
"""

SCRIPT = """\
import numpy as np
import torch
from torch.utils.data import Dataset
from trainer import Trainer

class FrameDataset(Dataset):
    def __init__(self, frames):
        self.frames = frames

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, idx):
        states = torch.tensor(np.array(self.frames[idx]), dtype={dtype})
        states = {scaled}
        return states, 0

def main(model, frames):
    trainer = Trainer(model, FrameDataset(frames), None, torch.device("cuda"))
    return trainer
"""


@pytest.mark.parametrize(("dtype", "scaled", "flagged"), [("torch.float32", "states / 255.", True), ("torch.uint8", "states.flip(0)", False)], ids=["float", "uint8"])
def test_a_dataset_chosen_by_a_condition_in_another_module(tmp_path, capsys, dtype, scaled, flagged):
    """decision-transformer's Trainer: the loader reads `self.train_dataset if is_train else
    self.test_dataset`, each what the constructor was given by the script."""
    script = SCRIPT.replace("{dtype}", dtype).replace("{scaled}", scaled)
    found = project(tmp_path, {"trainer.py": TRAINER, "script.py": script}, capsys)
    assert found == ({("script.py", line_of(script, "states = states / 255.")): 1} if flagged else {})
