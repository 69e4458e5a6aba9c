"""`check --fix` / `--diff` / `--add-noqa` never write outside the root of the project being
linted: a file symlink `link.py -> ../outside/train.py` is linted and its findings reported,
but its target is not rewritten (a warning names it), unless the user named the target
itself on the command line (tests/../repro/hardening/symlink)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchsync_lint.cli import main
from torchsync_lint.fixing import write_scope

HAZARD = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)
model = torch.nn.Linear(4, 1).cuda()
for (x,) in loader:
    x = x.cuda()
    loss = model(x).mean()
    loss.backward()
"""
ARGS = ["--no-cache", "--isolated", "--select", "TSL301,TSL302"]


@pytest.fixture
def layout(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """proj/ (the project, the working directory) with link.py -> ../outside/train.py."""
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (outside / "train.py").write_text(HAZARD)
    os.symlink(os.path.join("..", "outside", "train.py"), project / "link.py")
    monkeypatch.chdir(project)
    return project, outside / "train.py"


def _warned(err: str, target: Path) -> bool:
    return f"link.py: not written: it leads to {os.path.realpath(target)}, outside the project root" in err


@pytest.mark.parametrize("named", [".", "link.py"])
def test_fix_does_not_rewrite_a_symlinks_target_outside_the_project(layout, capsys, named):
    _, target = layout
    code = main(["check", *ARGS, "--fix", named])
    out, err = capsys.readouterr()
    assert target.read_text() == HAZARD
    assert _warned(err, target)
    assert code == 1 and "link.py:6:9: TSL301" in out and "link.py:3:10: TSL302" in out  # still reported
    assert "Fixed 0 findings in 0 files." in out


def test_fix_rewrites_the_target_when_it_is_named_itself(layout, capsys):
    _, target = layout
    code = main(["check", *ARGS, "--fix", str(target)])
    err = capsys.readouterr().err
    assert "non_blocking=True" in target.read_text() and "pin_memory=torch.cuda.is_available()" in target.read_text()
    assert code == 0 and "not written" not in err


def test_a_symlink_that_stays_in_the_project_is_fixed(layout, capsys):
    project, _ = layout
    (project / "sub").mkdir()
    (project / "sub" / "real.py").write_text(HAZARD)
    os.symlink(os.path.join("sub", "real.py"), project / "alias.py")
    assert main(["check", *ARGS, "--fix", "alias.py"]) == 0
    assert "non_blocking=True" in (project / "sub" / "real.py").read_text()
    assert "not written" not in capsys.readouterr().err


def test_diff_leaves_out_what_fix_would_not_write(layout, capsys):
    _, target = layout
    code = main(["check", *ARGS, "--diff", "."])
    out, err = capsys.readouterr()
    assert out == "" and code == 0 and _warned(err, target)
    assert "Would fix 0 findings in 0 files." in err


def test_add_noqa_does_not_write_outside_the_project_either(layout, capsys):
    _, target = layout
    code = main(["check", *ARGS, "--add-noqa", "."])
    err = capsys.readouterr().err
    assert target.read_text() == HAZARD
    assert _warned(err, target) and "link.py:6:9: TSL301" in err and "Added 0 noqa directives in 0 files." in err
    assert code == 1
    assert main(["check", *ARGS, "--add-noqa", str(target)]) == 0  # the target, named itself
    assert target.read_text().count("# noqa: TSL30") == 2


def test_outside_target_resolves_the_path_against_its_project_root(layout):
    project, target = layout
    (project / "plain.py").write_text("x = 1\n")
    assert write_scope.outside_target("plain.py") is None
    assert write_scope.outside_target("link.py") == (os.path.realpath(target), os.path.realpath(project))
    assert write_scope.outside_target("link.py", write_scope.named_targets([str(target)])) is None
    assert write_scope.named_targets(["link.py", "plain.py", "-", "missing.py"]) == {os.path.realpath(project / "plain.py")}
