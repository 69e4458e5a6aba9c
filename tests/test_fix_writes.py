"""How `--fix` writes: never over an edit made since it read the file, and through hard links."""

from __future__ import annotations

import os
from argparse import Namespace

from torchsync_lint.api import linter_for
from torchsync_lint.cli import main
from torchsync_lint.config import Config
from torchsync_lint.fixing.command import run_fix_command

HAZARD = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
"""
FIXED = HAZARD.replace("x.to(device)", "x.to(device, non_blocking=True)")
ARGS = ["--isolated", "--select", "TSL301"]


def test_an_edit_made_while_fixing_is_not_overwritten(tmp_path, capsys):
    target = tmp_path / "train.py"
    target.write_text(HAZARD)
    users_edit = HAZARD + "print('edited in the editor meanwhile')\n"
    edited = []

    def lint_factory(path, config):
        real = linter_for(path, config)

        def lint(text):
            if not edited:  # the user saves the file while the fixer is working on it
                target.write_text(users_edit)
                edited.append(True)
            return real(text)

        return lint

    args = Namespace(diff=False, format="text", output_file=None, quiet=False, exit_zero=False, jobs=1)
    code = run_fix_command(args, Config(select=["TSL301"]), [str(target)], lint_factory=lint_factory)
    out, err = capsys.readouterr()
    assert target.read_text() == users_edit
    assert "the file changed on disk since it was read; it was left as it is (run --fix again)" in err
    assert code == 1  # its finding was not fixed, so it remains
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tsl-tmp")]
    # run again, and the fix lands on the edited text
    assert main(["--fix", *ARGS, str(target)]) == 0
    assert target.read_text() == users_edit.replace("x.to(device)", "x.to(device, non_blocking=True)")


def test_fix_keeps_hard_links_pointing_at_one_file(tmp_path, capsys):
    target = tmp_path / "train.py"
    target.write_text(HAZARD)
    other = tmp_path / "linked_copy.py"
    os.link(target, other)
    inode = target.stat().st_ino
    target.chmod(0o640)
    assert main(["--fix", *ARGS, str(target)]) == 0
    assert target.read_text() == FIXED and other.read_text() == FIXED
    assert target.stat().st_ino == inode == other.stat().st_ino and target.stat().st_nlink == 2
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(os.listdir(tmp_path)) == ["linked_copy.py", "train.py"]  # no temporary copy left


def test_a_single_link_file_is_still_replaced_atomically(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(HAZARD)
    inode = target.stat().st_ino
    assert main(["--fix", *ARGS, str(target)]) == 0
    assert target.read_text() == FIXED
    assert target.stat().st_ino != inode  # a new file renamed over the old one
