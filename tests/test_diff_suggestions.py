"""`--diff` is exactly what `--fix` writes; suggestions are a separate text listing.

Issue 15: `patch -p0` applied the TSL304 suggestion from `--diff` (ToTensor -> PILToTensor with
Normalize left in place, which raises at runtime) and `git apply` rejected the whole patch.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from torchsync_lint import suggestions
from torchsync_lint.api import FileResult
from torchsync_lint.cli import main
from torchsync_lint.files import SourceFile
from torchsync_lint.types import Applicability, Edit, Finding, Fix

PIPELINE = """\
import torch
import torchvision
from torchvision import transforms
from torch.utils.data import DataLoader

device = torch.device("cuda")
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26)),
])
train_set = torchvision.datasets.CIFAR10("data", transform=transform)
loader = DataLoader(train_set, batch_size=128)
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    x = x.to(device)
    model(x).sum().backward()
"""

needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="patch is not installed")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _two_copies(tmp_path, data: bytes, name: str = "train.py"):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / name).write_bytes(data)
    return tmp_path / "a", tmp_path / "b"


@needs_patch
@pytest.mark.parametrize("unsafe", [False, True])
def test_patch_p0_of_the_diff_gives_what_fix_writes(tmp_path, monkeypatch, unsafe):
    flags = ["--unsafe-fixes"] if unsafe else []
    patched, fixed = _two_copies(tmp_path, PIPELINE.encode())
    monkeypatch.chdir(patched)
    code, diff, err = run("check", "--isolated", "--diff", *flags, "train.py")
    assert code == 1 and diff.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "PILToTensor" not in diff and "suggested" not in diff  # the TSL304 suggestion is not a fix
    assert "1 suggestion not in the diff" in err and "--show-suggestions" in err
    subprocess.run(["patch", "-p0", "--quiet"], input=diff, text=True, cwd=patched, check=True)
    run("check", "--isolated", "--fix", *flags, str(fixed / "train.py"))
    assert (patched / "train.py").read_bytes() == (fixed / "train.py").read_bytes() != PIPELINE.encode()


@needs_git
def test_git_apply_p0_accepts_the_diff(tmp_path, monkeypatch):
    repo, fixed = _two_copies(tmp_path, PIPELINE.encode())
    monkeypatch.chdir(repo)
    diff = run("check", "--isolated", "--diff", "--unsafe-fixes", "train.py")[1]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "-p0"], input=diff, text=True, cwd=repo, check=True)
    run("check", "--isolated", "--fix", "--unsafe-fixes", str(fixed / "train.py"))
    assert (repo / "train.py").read_bytes() == (fixed / "train.py").read_bytes()


@needs_patch
@pytest.mark.parametrize(
    "data",
    [
        PIPELINE.rstrip("\n").encode(),  # the fixed line is the last one, with no newline after it
        PIPELINE.replace("\n", "\r\n").encode(),
    ],
    ids=["no-final-newline", "crlf"],
)
def test_diff_keeps_line_endings_exactly(tmp_path, monkeypatch, data):
    data = data.replace(b"    model(x).sum().backward()", b"    model(x).sum().backward(); y = y.to(device)")
    patched, fixed = _two_copies(tmp_path, data)
    monkeypatch.chdir(patched)
    diff = run("check", "--isolated", "--diff", "train.py")[1]
    if not data.endswith(b"\n"):
        assert diff.endswith("\n\\ No newline at end of file\n")
    subprocess.run(["patch", "-p0", "--quiet"], input=diff.encode(), cwd=patched, check=True)
    run("check", "--isolated", "--fix", str(fixed / "train.py"))
    assert (patched / "train.py").read_bytes() == (fixed / "train.py").read_bytes() != data


@needs_patch
def test_show_suggestions_is_text_that_patch_refuses(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(PIPELINE)
    monkeypatch.chdir(tmp_path)
    code, out, err = run("check", "--isolated", "--show-suggestions", "train.py")
    assert code == 0, err
    first, summary = out.splitlines()
    assert first.startswith("train.py:8:5: TSL304 suggestion (not applied by --fix): Keep uint8 on the host")
    assert "replace `transforms.ToTensor()` with `transforms.PILToTensor()`" in first
    assert "`x = x.to(device, non_blocking=True).float().div_(255)`" in first and "torch.tensor((0.49, 0.48, 0.45), device=device)" in first
    assert summary == "1 suggestion; --fix and --diff never apply them."
    proc = subprocess.run(["patch", "-p0"], input=out, text=True, cwd=tmp_path, capture_output=True)
    assert proc.returncode != 0 and (tmp_path / "train.py").read_text() == PIPELINE
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        assert subprocess.run(["git", "apply", "-p0"], input=out, text=True, cwd=tmp_path, capture_output=True).returncode != 0
    assert run("check", "--isolated", "--show-suggestions", "--diff", "train.py")[0] == 2  # one mode at a time


def test_a_suggestion_with_edits_is_shown_as_prose():
    edit = Edit(1, 5, 1, 9, "g(1)")
    finding = Finding("t.py", 1, 5, 1, 9, "TSL304", "n", "m", fix=Fix("Use g", (edit,), Applicability.SUGGESTION))
    text = suggestions.render([FileResult("t.py", [finding], [], SourceFile("x = f(1)\n", "utf-8", "\n"))])
    assert text == "t.py:1:5: TSL304 suggestion (not applied by --fix): Use g\n    line 1, column 5: replace `f(1)` with `g(1)`\n1 suggestion; --fix and --diff never apply them.\n"
    assert "\n+" not in text and "@@" not in text and "---" not in text
