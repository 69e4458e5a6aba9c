"""A transform pipeline built in one module, in the helper that builds the datasets, feeds a
loader in another module whatever way the datasets come back: a tuple the caller unpacks
(`size, n, train_ds, test_ds = get_cifar()`), a dict of such helpers picked by a literal key
(`all_datasets["CIFAR10"]()`) or by an argparse option (`all_datasets[args.dataset]()`, only the
option's `choices`). The VALID near-misses: the entries an option's choices exclude, the other
entry of a literal key, a helper whose datasets no device-fed loader reads."""

from __future__ import annotations

from tests.test_objects import project

DATASETS = '''
from torchvision import datasets, transforms


def get_mnist(root="./"):
    transform = transforms.Compose([transforms.ToTensor()])
    return 28, 10, datasets.MNIST(root, train=True, transform=transform), datasets.MNIST(root, train=False, transform=transform)


def get_cifar(root="./"):
    train_transform = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
    train_dataset = datasets.CIFAR10(root, train=True, transform=train_transform)
    test_dataset = datasets.CIFAR10(root, train=False, transform=transforms.ToTensor())
    return 32, 10, train_dataset, test_dataset


all_datasets = {"MNIST": get_mnist, "CIFAR10": get_cifar}
'''

TRAIN = '''
import argparse

import torch
from data import all_datasets, get_cifar


def main(model, opt):
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", choices=["CIFAR10"], required=True)
    args = parser.parse_args()
    {pick}
    input_size, num_classes, train_dataset, test_dataset = ds
    loader = torch.utils.data.DataLoader(train_dataset, batch_size=128, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        model(x).sum().backward()
        opt.step()
'''

CIFAR_LINES = {("data.py", 11, "TSL304"), ("data.py", 13, "TSL304")}


def _lint(tmp_path, capsys, pick: str):
    files = {"data.py": DATASETS, "train.py": TRAIN.format(pick=pick)}
    return set(project(tmp_path, files, capsys, select="TSL304"))


def test_unpacked_from_a_helper_by_name(tmp_path, capsys):
    assert _lint(tmp_path, capsys, "ds = get_cifar()") == CIFAR_LINES


def test_unpacked_directly(tmp_path, capsys):
    files = {"data.py": DATASETS, "train.py": TRAIN.format(pick="pass").replace("= ds", "= get_cifar()")}
    assert set(project(tmp_path, files, capsys, select="TSL304")) == CIFAR_LINES


def test_picked_by_a_literal_key(tmp_path, capsys):
    assert _lint(tmp_path, capsys, 'ds = all_datasets["CIFAR10"]()') == CIFAR_LINES


def test_picked_by_an_option_only_its_choices(tmp_path, capsys):
    # `MNIST` is not among `--dataset`'s choices: get_mnist's pipeline never feeds this loader
    assert _lint(tmp_path, capsys, "ds = all_datasets[args.dataset]()") == CIFAR_LINES


def test_picked_by_a_value_of_unknown_choices_is_any_entry(tmp_path, capsys):
    found = _lint(tmp_path, capsys, "ds = all_datasets[args.other]()")
    assert CIFAR_LINES <= found and ("data.py", 6, "TSL304") in found


def test_valid_the_other_literal_key(tmp_path, capsys):
    assert ("data.py", 11, "TSL304") not in _lint(tmp_path, capsys, 'ds = all_datasets["MNIST"]()')


def test_valid_datasets_no_device_loader_reads(tmp_path, capsys):
    files = {"data.py": DATASETS, "train.py": "from data import get_cifar\n\n\ndef count():\n    size, n, train_ds, test_ds = get_cifar()\n    return len(train_ds)\n"}
    assert set(project(tmp_path, files, capsys, select="TSL304")) == set()
