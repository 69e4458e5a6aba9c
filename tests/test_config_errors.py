"""A config we cannot read exactly is exit 2 with the file and the problem named (as ruff),
never a silent default, a silently skipped file, or a parent's settings."""

from __future__ import annotations

import pytest

from torchsync_lint.cli import main

HAZARD = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    loss = model(x.to(device, non_blocking=True)).sum()
    loss.backward()
    total += loss.item()
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "train.py").write_text(HAZARD)
    return tmp_path


@pytest.mark.parametrize(
    ("line", "key", "expected"),
    [
        ('unsafe-fixes = "false"', "unsafe-fixes", "expected a boolean"),
        ('force-exclude = "no"', "force-exclude", "expected a boolean"),
        ("respect-gitignore = 1", "respect-gitignore", "expected a boolean"),
        ('select = "TSL1"', "select", "expected an array of strings"),
        ("extend-exclude = [1, 2]", "extend-exclude", "expected an array of strings"),
        ('torchmetrics-version = "banana"', "torchmetrics-version", 'expected a release number such as "1.6.2"'),
        ("torchmetrics-version = 1.6", "torchmetrics-version", "expected a release number"),
        ('per-file-ignores = "tests/*"', "per-file-ignores", "expected a table"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_naming_file_and_key(project, capsys, line, key, expected):
    (project / "pyproject.toml").write_text(f"[tool.torchsync-lint]\n{line}\n")
    for argv in (["train.py"], ["--fix", "train.py"]):
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert str(project / "pyproject.toml") in err and key in err and expected in err, err
        assert "internal error" not in err
    assert (project / "train.py").read_text() == HAZARD  # --fix wrote nothing


def test_a_per_file_ignore_value_of_the_wrong_type_names_its_pattern(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint.per-file-ignores]\n"tests/*" = "TSL1"\n')
    code, _, err = run(capsys, "train.py")
    assert code == 2 and "per-file-ignores.tests/*: expected an array of strings" in err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[tool.torchsync-lint\nselect = ['TSL1']\n", "cannot parse: Expected ']'"),
        (b"[tool.torchsync-lint]\nselect = ['TSL1']\nselect = ['TSL2']\n", "cannot parse: Cannot overwrite a value"),
        (b"\xef\xbb\xbf[tool.torchsync-lint]\nselect = ['TSL1']\n", "cannot parse: the file starts with a UTF-8 byte-order mark"),
        (b"[tool.torchsync-lint]\n# caf\xe9\nselect = ['TSL1']\n", "cannot parse: not valid UTF-8"),
        (b"[tool.torchsync-lint]\nselect = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "cannot parse: arrays or tables nested too deeply"),
    ],
    ids=["bad-toml", "duplicate-key", "bom", "latin-1", "nested-too-deeply"],
)
def test_a_malformed_pyproject_is_an_error_not_skipped(project, capsys, content, problem):
    (project / "pyproject.toml").write_bytes(content)
    code, out, err = run(capsys, "train.py")
    assert code == 2, (out, err)
    assert f"{project / 'pyproject.toml'}: {problem}" in err, err
    # also when a parent's config would otherwise be used instead
    sub = project / "sub"
    sub.mkdir()
    (sub / "train.py").write_text(HAZARD)
    (sub / "pyproject.toml").write_bytes(content)
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL101"]\n')
    code, out, err = run(capsys, "sub/train.py")
    assert code == 2 and f"{sub / 'pyproject.toml'}: {problem}" in err, (out, err)
    code, _, err = run(capsys, "--config", str(sub / "pyproject.toml"), "train.py")
    assert code == 2 and problem in err


def test_valid_values_still_work(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.torchsync-lint]\nunsafe-fixes = false\nforce-exclude = true\nrespect-gitignore = false\n'
        'select = ["TSL1"]\ntorchmetrics-version = "1.5.2"\n'
    )
    assert run(capsys, "train.py")[0] == 1
