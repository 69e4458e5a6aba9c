"""Each file gets the settings of its nearest [tool.torchsync-lint] (settings.py), whatever the
order the files are named in, in every entry point; `--config FILE` applies to all files.

The layout of the user report: a root pyproject.toml without our table, and `sub/` with its
own table that ignores TSL1. Named in either order, `probe.py` keeps its TSL101 and
`sub/probe.py` loses it (before, the first file's settings applied to both).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROBE = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    total += loss.item()
"""
BOTH = [("TSL101", 7), ("TSL301", 5)]  # what the defaults find in PROBE
NO_TSL1 = [("TSL301", 5)]
ORDERS = [("probe.py", "sub/probe.py"), ("sub/probe.py", "probe.py")]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "root"\n')  # no [tool.torchsync-lint]
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL1"]\n')
    (tmp_path / "sub" / "probe.py").write_text(PROBE)
    return tmp_path


def _by_path(out: str) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list] = {}
    for d in json.loads(out):
        found.setdefault(d["path"], []).append((d["code"], d["line"]))
    return {path: sorted(codes) for path, codes in found.items()}


@pytest.mark.parametrize("order", ORDERS)
def test_check_gives_each_file_its_nearest_settings_in_any_order(tree, capsys, order):
    code, out, err = run(capsys, "--no-cache", "--format", "json", *order)
    assert code == 1, err
    assert _by_path(out) == {"probe.py": BOTH, "sub/probe.py": NO_TSL1}


def test_a_directory_walk_applies_each_subprojects_settings_and_excludes(tree, capsys):
    (tree / "sub" / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL1"]\nextend-exclude = ["gen"]\n')
    for where in (tree / "gen", tree / "sub" / "gen"):
        where.mkdir()
        (where / "made.py").write_text(PROBE)
    code, out, _ = run(capsys, "--no-cache", "--format", "json", ".")
    # sub's `gen` pattern is sub's: the root's gen/ is linted, sub/gen/ is not
    assert _by_path(out) == {"gen/made.py": BOTH, "probe.py": BOTH, "sub/probe.py": NO_TSL1}


def test_a_pyproject_without_our_table_is_skipped_for_the_one_above(tree, capsys):
    """As ruff skips a pyproject.toml without [tool.ruff]: `sub/deeper/` has a pyproject.toml
    of its own (another project for the project view) but no table, so sub's settings hold,
    their patterns relative to sub/."""
    (tree / "sub" / "pyproject.toml").write_text('[tool.torchsync-lint]\n[tool.torchsync-lint.per-file-ignores]\n"deeper/*" = ["TSL3"]\n')
    deeper = tree / "sub" / "deeper"
    deeper.mkdir()
    (deeper / "pyproject.toml").write_text('[project]\nname = "deeper"\n')
    (deeper / "probe.py").write_text(PROBE)
    code, out, _ = run(capsys, "--no-cache", "--format", "json", "sub/deeper/probe.py", "probe.py")
    assert _by_path(out) == {"probe.py": BOTH, "sub/deeper/probe.py": [("TSL101", 7)]}


@pytest.mark.parametrize("order", ORDERS)
def test_an_explicit_config_applies_to_every_file(tree, capsys, order):
    (tree / "other.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL3"]\n')
    code, out, _ = run(capsys, "--no-cache", "--format", "json", "--config", "other.toml", *order)
    assert _by_path(out) == {"probe.py": [("TSL101", 7)], "sub/probe.py": [("TSL101", 7)]}
    code, out, _ = run(capsys, "--no-cache", "--format", "json", "--isolated", *order)
    assert _by_path(out) == {"probe.py": BOTH, "sub/probe.py": BOTH}


@pytest.mark.parametrize("order", ORDERS)
def test_command_line_selectors_apply_over_every_files_settings(tree, capsys, order):
    code, out, _ = run(capsys, "--no-cache", "--format", "json", "--extend-select", "TSL101", *order)
    assert _by_path(out) == {"probe.py": BOTH, "sub/probe.py": BOTH}  # the CLI wins over sub's ignore
    code, out, _ = run(capsys, "--no-cache", "--format", "json", "--ignore", "TSL3", *order)
    assert _by_path(out) == {"probe.py": [("TSL101", 7)]}


def test_show_settings_names_the_files_own_configuration(tree, capsys):
    _, out, _ = run(capsys, "--show-settings", "probe.py", "sub/probe.py")
    assert "(none: built-in defaults)" in out
    _, out, _ = run(capsys, "--show-settings", "sub/probe.py", "probe.py")
    assert str(tree / "sub" / "pyproject.toml") in out and 'ignore = ["TSL1"]' in out


@pytest.mark.parametrize("order", ORDERS)
def test_fix_uses_each_files_settings(tree, capsys, order):
    """sub ignores TSL3 here: its copy is left alone, the root's gets `non_blocking=True`."""
    (tree / "sub" / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL3"]\n')
    code, out, err = run(capsys, "--no-cache", "--fix", *order)
    assert "x.to(device, non_blocking=True)" in (tree / "probe.py").read_text(), out + err
    assert (tree / "sub" / "probe.py").read_text() == PROBE


@pytest.mark.parametrize("order", ORDERS)
def test_add_noqa_uses_each_files_settings(tree, capsys, order):
    code, out, err = run(capsys, "--no-cache", "--add-noqa", *order)
    assert code == 0, err
    root_lines = (tree / "probe.py").read_text().splitlines()
    sub_lines = (tree / "sub" / "probe.py").read_text().splitlines()
    assert root_lines[6].endswith("# noqa: TSL101") and root_lines[4].endswith("# noqa: TSL301")
    assert sub_lines[6] == "    total += loss.item()" and sub_lines[4].endswith("# noqa: TSL301")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.mark.parametrize("order", ORDERS)
def test_flake8_uses_each_files_settings(tree, order):
    pytest.importorskip("flake8")
    proc = subprocess.run([sys.executable, "-m", "flake8", "-j", "1", "--select", "TSL", *order], cwd=tree, env=_env(), capture_output=True, text=True, timeout=300)
    rows = sorted((line.split(":")[0], line.split(" ")[1], int(line.split(":")[1])) for line in proc.stdout.splitlines())
    assert rows == [("probe.py", "TSL101", 7), ("probe.py", "TSL301", 5), ("sub/probe.py", "TSL301", 5)], proc.stderr


def test_flake8_torchmetrics_version_is_the_files_own(tree):
    """TSL203 (MeanMetric without weight) fires for torchmetrics older than the fix only: sub
    says 1.3.0, the root nothing (the installed release, or off)."""
    pytest.importorskip("flake8")
    from torchsync_lint.flake8 import _config_for, _settings

    (tree / "sub" / "pyproject.toml").write_text('[tool.torchsync-lint]\ntorchmetrics-version = "1.3.0"\n')
    assert _settings(_config_for(str(tree / "sub" / "probe.py"), False), None) == {"torchmetrics-version": "1.3.0"}
    assert _settings(_config_for(str(tree / "probe.py"), False), None) == {"torchmetrics-version": None}
    assert _settings(_config_for(str(tree / "sub" / "probe.py"), False), "1.8.0") == {"torchmetrics-version": "1.8.0"}


@pytest.mark.parametrize("order", ORDERS)
def test_server_documents_get_their_own_settings_in_any_order(tree, order):
    from torchsync_lint.server.workspace import Workspace

    ws = Workspace(use_cache=False)
    for name in order:
        ws.open(str(tree / name), PROBE, 1)
    found = {name: sorted((f.code, f.line) for f in ws.documents[str(tree / name)].outcome.findings) for name in order}
    assert found == {"probe.py": BOTH, "sub/probe.py": NO_TSL1}


@pytest.mark.parametrize("order", ORDERS)
def test_verify_expects_what_each_scripts_settings_report(tree, order):
    from torchsync_lint.verify.command import static_expectations

    got = {name: sorted((e.code, e.line) for e in static_expectations(str(tree / name), {})[0] if e.static) for name in order}
    assert got == {"probe.py": BOTH, "sub/probe.py": NO_TSL1}


def test_flake8_keeps_each_files_settings_when_another_configuration_is_broken(tree):
    pytest.importorskip("flake8")
    from torchsync_lint.flake8 import _HIERARCHY, _config_for

    (tree / "pyproject.toml").write_text("[tool.torchsync-lint]\nselect = [\n")  # the root's does not parse
    _HIERARCHY.clear()
    assert _config_for(str(tree / "sub" / "probe.py"), False).ignore == ["TSL1"]
    assert _config_for(str(tree / "probe.py"), False).source is None  # the defaults: our CLI reports it
