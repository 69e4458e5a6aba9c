"""CLI conventions shared with ruff: unknown subcommands, --output-file, --stdin-filename,
how walked paths are printed, --statistics, and undecodable stdin."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.cli import main

HAZARD = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    print(loss)
"""
ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(HAZARD)
    return tmp_path


# -- subcommands ---------------------------------------------------------------------------

def test_a_mistyped_subcommand_is_a_usage_error(project, capsys):
    code, out, err = run(capsys, "chek", "src")
    assert code == 2 and out == ""
    assert "unrecognized subcommand 'chek'" in err and "did you mean 'check'?" in err
    code, _, err = run(capsys, "lint", "src")
    assert code == 2 and "unrecognized subcommand 'lint'" in err


def test_paths_still_mean_check(project, capsys):
    assert run(capsys, "src")[0] == 1  # an existing directory, named like a word
    assert run(capsys, "src/")[0] == 1
    assert run(capsys, "src/train.py")[0] == 1
    code, out, err = run(capsys, "missing.py")  # looks like a path: TSL902, as before
    assert code == 2 and "missing.py:1:1: TSL902" in out and "unrecognized" not in err


# -- --output-file --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("extra", "written"),
    [([], "TSL301"), (["--fix"], "TSL103"), (["--diff"], "non_blocking=True"), (["--statistics"], "TSL301")],
)
def test_output_file_in_a_missing_directory_is_created(project, capsys, extra, written):
    target = project / "reports" / "deep" / "out.txt"
    code, out, err = run(capsys, *extra, "--output-file", str(target), "src")
    assert code == 1, err
    assert target.is_file() and written in target.read_text()
    assert "internal error" not in err


def test_output_file_that_cannot_be_written_is_a_clear_error(project, capsys):
    (project / "blocker").write_text("a file, not a directory")
    code, out, err = run(capsys, "-o", "blocker/out.json", "--format", "json", "src")
    assert code == 2
    assert "torchsync-lint: error: cannot write the report to blocker/out.json" in err
    assert "internal error" not in err


# -- stdin -----------------------------------------------------------------------------------

def test_stdin_filename_without_dash_lints_stdin(project, capsys, monkeypatch):
    (project / "src" / "train.py").write_text("import torch\n")  # the file on disk is clean
    monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
    code, out, err = run(capsys, "--format", "json", "--stdin-filename", "src/train.py")
    assert code == 1
    assert {d["path"] for d in json.loads(out)} == {"src/train.py"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
    code, out, err = run(capsys, "--format", "json", "--stdin-filename", "x.py", "src")
    assert code == 1 and {d["path"] for d in json.loads(out)} == {"x.py"}
    assert "ignoring file src in favor of standard input" in err


def test_stdin_filename_picks_the_config_of_its_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL1", "TSL3"]\n')
    (tmp_path / "proj" / "train.py").write_text("")
    monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
    assert run(capsys, "--stdin-filename", "proj/train.py", "-")[0] == 0


def _stdin_run(args, data: bytes, cwd):
    return subprocess.run(
        [sys.executable, "-m", "torchsync_lint", "--isolated", *args], input=data, capture_output=True, cwd=cwd,
        timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
    )


def test_undecodable_stdin_is_tsl901_not_an_internal_error(tmp_path):
    data = HAZARD.replace("import torch", "import torch  # caf\xe9").encode("latin-1")
    proc = _stdin_run(["-", "--stdin-filename", "train.py"], data, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"train.py:1:1: TSL901 cannot decode" in proc.stdout and b"internal error" not in proc.stderr
    # --fix on stdin hands the input back unchanged (an editor replaces its buffer with it)
    proc = _stdin_run(["--fix", "-"], data, tmp_path)
    assert proc.returncode == 2 and proc.stdout == data
    assert b"TSL901 cannot decode" in proc.stderr and b"internal error" not in proc.stderr


def test_a_declared_encoding_on_stdin_is_honoured(tmp_path):
    data = ("# -*- coding: latin-1 -*-\n" + HAZARD.replace("import torch", "import torch  # caf\xe9")).encode("latin-1")
    proc = _stdin_run(["--format", "json", "-"], data, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert {d["code"] for d in json.loads(proc.stdout)} == {"TSL301", "TSL103"}


# -- how paths are printed --------------------------------------------------------------------

def test_walked_paths_have_no_dot_slash(project, capsys):
    code, out, _ = run(capsys, "-q", ".")
    assert out.splitlines()[0].startswith("src/train.py:7:18: TSL301")
    code, out, _ = run(capsys, "--format", "json", "./src")
    assert {d["path"] for d in json.loads(out)} == {"src/train.py"}
    code, out, _ = run(capsys, "--format", "json", "src/")
    assert {d["path"] for d in json.loads(out)} == {"src/train.py"}
    code, out, _ = run(capsys, "--format", "json", "./src/train.py")  # a file named explicitly: as given
    assert {d["path"] for d in json.loads(out)} == {"./src/train.py"}


# -- --statistics -------------------------------------------------------------------------------

def test_statistics_prints_only_the_table(project, capsys):
    code, out, _ = run(capsys, "--statistics", "src")
    assert code == 1
    assert out.splitlines() == ["    1  TSL103  tensor-format-in-loop", "    1  TSL301  blocking-host-to-device-copy"]


def test_statistics_as_json(project, capsys):
    code, out, _ = run(capsys, "--statistics", "--format", "json", "src")
    assert code == 1
    assert json.loads(out) == [
        {"code": "TSL103", "name": "tensor-format-in-loop", "count": 1, "fixable": 0},
        {"code": "TSL301", "name": "blocking-host-to-device-copy", "count": 1, "fixable": 1},
    ]
    code, _, err = run(capsys, "--statistics", "--format", "sarif", "src")
    assert code == 2 and "--statistics" in err
