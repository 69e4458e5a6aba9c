"""`--force-exclude` / `force-exclude = true`: excludes hold for paths named explicitly
(pre-commit names every staged file), while by default a named file is always linted."""

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


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "v.py").write_text(HAZARD)
    (tmp_path / "own.py").write_text(HAZARD)
    (tmp_path / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-exclude = ["vendor"]\n')
    return tmp_path


def _json(capsys, *argv):
    import json

    code = main(["check", "--format", "json", *argv])
    return code, {f["path"] for f in json.loads(capsys.readouterr().out)}


def test_named_files_are_linted_unless_forced(project, capsys):
    assert _json(capsys, "own.py", "vendor/v.py") == (1, {"own.py", "vendor/v.py"})
    assert _json(capsys, "--force-exclude", "own.py", "vendor/v.py") == (1, {"own.py"})
    assert _json(capsys, "--force-exclude", "vendor/v.py") == (0, set())
    assert _json(capsys, ".") == (1, {"own.py"})  # a directory walk always honours excludes


def test_force_exclude_from_config(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-exclude = ["vendor"]\nforce-exclude = true\n')
    assert _json(capsys, "own.py", "vendor/v.py") == (1, {"own.py"})
