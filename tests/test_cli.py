"""The CLI end to end: output formats, exit codes, selection, bad input, start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
CLEAN = "import torch\nx = torch.zeros(3)\nprint(x.sum().item())\n"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "bad.py").write_text(HAZARD)
    (tmp_path / "good.py").write_text(CLEAN)
    return tmp_path


def test_text_output_has_location_snippet_caret_and_summary(project, capsys):
    code, out, _ = run(capsys, "bad.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("bad.py:7:14: TSL101 `loss.item()`")
    assert lines[1] == "        total += loss.item()"
    assert lines[2] == "    " + " " * 13 + "^" * len("loss.item()")
    assert lines[-1] == "Found 1 finding in 1 file checked."


def test_clean_file_exits_zero(project, capsys):
    code, out, _ = run(capsys, "check", "good.py")
    assert code == 0
    assert "Found 0 findings" in out


def test_json_is_sorted_one_based_and_keeps_relative_paths(project, capsys):
    (project / "sub").mkdir()
    (project / "sub" / "a.py").write_text(HAZARD + "    print(loss)\n")
    code, out, _ = run(capsys, "--format", "json", "sub/", "bad.py")
    assert code == 1
    data = json.loads(out)
    assert [(d["path"], d["line"], d["column"]) for d in data] == [("bad.py", 7, 14), ("sub/a.py", 7, 14), ("sub/a.py", 8, 11)]
    first = data[0]
    assert set(first) >= {"path", "line", "column", "end_line", "end_column", "code", "name", "message", "severity", "fix"}
    assert first["end_column"] == first["column"] + len("loss.item()")
    assert first["name"] == "host-read-in-loop" and first["severity"] == "warning"


def test_exit_zero_and_quiet(project, capsys):
    code, out, _ = run(capsys, "--exit-zero", "--quiet", "bad.py", "good.py")
    assert code == 0
    assert "total += loss.item()" not in out  # no snippet with --quiet
    assert out.count("TSL101") == 1


def test_select_and_ignore_accept_codes_prefixes_and_names(project, capsys):
    assert run(capsys, "--select", "TSL104", "bad.py")[0] == 0
    assert run(capsys, "--select", "host-read-in-loop", "bad.py")[0] == 1
    assert run(capsys, "--ignore", "TSL1", "bad.py")[0] == 0
    code, _, err = run(capsys, "--select", "TSL999", "bad.py")
    assert code == 2 and "unknown rule selector" in err


def test_statistics_counts_per_rule(project, capsys):
    code, out, _ = run(capsys, "--statistics", "-q", "bad.py")
    assert "    1  TSL101  host-read-in-loop" in out


def test_directory_walk_skips_default_excludes(project, capsys):
    for skipped in (".venv", "build", "node_modules"):
        (project / skipped).mkdir()
        (project / skipped / "x.py").write_text(HAZARD)
    code, out, _ = run(capsys, "--format", "json", ".")
    assert sorted({d["path"] for d in json.loads(out)}) == ["bad.py"]


def test_config_file_selects_ignores_and_excludes(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.torchsync-lint]\nignore = ["TSL103"]\nexclude = ["legacy"]\n'
        '[tool.torchsync-lint.per-file-ignores]\n"scripts/*" = ["TSL101"]\n'
    )
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(HAZARD)
    (project / "scripts").mkdir()
    (project / "scripts" / "s.py").write_text(HAZARD + "    print(loss)\n")
    code, out, _ = run(capsys, "--format", "json", ".")
    assert [(d["path"], d["code"]) for d in json.loads(out)] == [("bad.py", "TSL101")]
    # --isolated ignores the file
    code, out, _ = run(capsys, "--isolated", "--format", "json", ".")
    paths = {d["path"] for d in json.loads(out)}
    assert "legacy/old.py" in paths and "scripts/s.py" in paths


def test_bad_config_is_a_usage_error(project, capsys):
    (project / "pyproject.toml").write_text("[tool.torchsync-lint]\nselekt = ['TSL1']\n")
    code, _, err = run(capsys, "bad.py")
    assert code == 2 and "unknown key" in err


def test_unknown_format_is_a_usage_error(project, capsys):
    code, _, err = run(capsys, "--format", "yaml", "bad.py")
    assert code == 2 and "unknown format" in err


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_jobs_below_one_is_a_usage_error(project, capsys, jobs):
    """`--jobs 0` named no number of workers (it ran serially, silently): a usage error."""
    code, _, err = run(capsys, "--jobs", jobs, "bad.py")
    assert code == 2 and "at least 1" in err
    assert run(capsys, "--jobs", "1", "--exit-zero", "bad.py")[0] == 0


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    assert "torchsync-lint" in capsys.readouterr().out


def test_stdin(project, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
    code, out, _ = run(capsys, "--format", "json", "--stdin-filename", "train.py", "-")
    assert code == 1
    assert json.loads(out)[0]["path"] == "train.py"


def test_stdin_filename_gets_the_per_file_settings_of_that_path(project, capsys, monkeypatch):
    """`check` and `--fix` on stdin both lint under --stdin-filename, so per-file-ignores apply."""
    import io

    (project / "pyproject.toml").write_text('[tool.torchsync-lint.per-file-ignores]\n"train.py" = ["TSL101"]\n')
    for extra in ([], ["--fix"]):
        monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
        code, out, err = run(capsys, *extra, "--stdin-filename", "train.py", "-")
        assert code == 0, (extra, out, err)
    monkeypatch.setattr(sys, "stdin", io.StringIO(HAZARD))
    assert run(capsys, "--stdin-filename", "other.py", "-")[0] == 1


def test_rules_and_explain_cover_every_rule(capsys):
    from torchsync_lint.rule import load_rules

    rules = load_rules()
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert code == 0 and [r["code"] for r in json.loads(out)] == list(rules)
    for rule in rules.values():
        code, out, _ = run(capsys, "explain", rule.code)
        assert code == 0 and "## Why is this bad?" in out and rule.name in out
    assert run(capsys, "explain", "host-read-in-loop")[0] == 0
    assert run(capsys, "explain", "TSL999")[0] == 2


def test_color_only_on_request(project, capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\033[" in run(capsys, "bad.py")[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in run(capsys, "bad.py")[1]


def test_lint_path_never_imports_torch(tmp_path):
    target = tmp_path / "t.py"
    target.write_text(HAZARD)
    code = (
        "import sys\nfrom torchsync_lint.cli import main\nrc = main(['-q', sys.argv[1]])\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torchmetrics', 'numpy')))\n"
        "print('IMPORTED', bad)\nsys.exit(0 if not bad and rc == 1 else 3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_importtime_shows_no_torch(tmp_path):
    target = tmp_path / "t.py"
    target.write_text(HAZARD)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "torchsync_lint", "-q", str(target)], capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert proc.returncode == 1
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "libcst" in imported
    assert not [m for m in imported if m == "torch" or m.startswith("torch.")]


def test_a_directory_named_explicitly_is_walked_even_inside_an_excluded_one(project, capsys):
    pkg = project / ".venv" / "lib" / "site-packages" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "train.py").write_text(HAZARD)
    (pkg / "build").mkdir()
    (pkg / "build" / "gen.py").write_text(HAZARD)
    code, out, _ = run(capsys, "--format", "json", ".venv/lib/site-packages/pkg")
    assert [d["path"] for d in json.loads(out)] == [".venv/lib/site-packages/pkg/train.py"]  # build/ below it still skipped
    code, out, _ = run(capsys, "--format", "json", ".")
    assert ".venv" not in out
