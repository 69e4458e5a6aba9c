"""A script that puts a directory on `sys.path` before importing from it (`sys.path.insert(0,
os.path.join(os.path.dirname(__file__), "lib"))`, through a helper, or in the `_init_paths`
module it imports first) has its imports resolved there: the project view follows them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchsync_lint.api import lint_paths
from torchsync_lint.config import Config
from torchsync_lint.project.sys_path import path_additions


@pytest.mark.parametrize(
    "source",
    [
        "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n",
        "import os.path as osp\nimport sys\nthis_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, 'lib')\nsys.path.append(lib_path)\n",
        "import os, sys\n\ndef add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\nadd_path(os.path.abspath(os.path.join(os.path.dirname(__file__), 'lib')))\n",
        "import sys\nsys.path.insert(0, 'lib')\n",  # relative: from where the script is run, its own directory
    ],
)
def test_the_added_directory_is_read(tmp_path, source):
    added, _ = path_additions(source, str(tmp_path / "src" / "train.py"))
    assert added == [os.path.normpath(str(tmp_path / "src" / "lib"))]


@pytest.mark.parametrize(
    "source",
    [
        "import os, sys\nsys.path.insert(0, os.getcwd())\n",  # not computable: nothing
        "import sys\nsys.path.insert(0, sys.argv[1])\n",
        "import sys\nprint(sys.path)\n",
        "def f(:\n",  # does not parse
    ],
)
def test_what_cannot_be_computed_adds_nothing(tmp_path, source):
    assert path_additions(source, str(tmp_path / "train.py"))[0] == []


LIB_MODEL = '''\
import torch


def loss_of(out):
    print(out.sum().item())
    return out.mean()
'''

SCRIPT = '''\
{prelude}
import torch
from torch.utils.data import DataLoader

from models.util import loss_of

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True):
    loss = loss_of(model(x.to(device, non_blocking=True)))
    loss.backward()
    opt.step()
'''

INIT_PATHS = "import os.path as osp\nimport sys\n\n\ndef add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\n\nadd_path(osp.join(osp.dirname(__file__), 'lib'))\n"


@pytest.mark.parametrize(
    "prelude, init_paths, found",
    [
        ("import _init_paths", True, True),  # the detection-code idiom
        ("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))", False, True),
        ("", False, False),  # nothing puts lib/ on the path: `models` is not the project's
    ],
)
def test_a_helper_under_an_added_directory_is_followed(tmp_path, prelude, init_paths, found):
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    lib = tmp_path / "src" / "lib" / "models"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "util.py").write_text(LIB_MODEL)
    (tmp_path / "src" / "train.py").write_text(SCRIPT.format(prelude=prelude))
    if init_paths:
        (tmp_path / "src" / "_init_paths.py").write_text(INIT_PATHS)
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    codes = [(f.line, f.code) for f in results["util.py"].findings]
    assert codes == ([(5, "TSL101")] if found else [])
