"""ruff's options that `check` lacked: --output-format (and `concise`), --exclude,
--extend-exclude, --per-file-ignores, --cache-dir, --fix-only, --show-fixes,
--exit-non-zero-on-fix, -q/--quiet, --silent, and "did you mean" for an unknown setting
key or option."""

from __future__ import annotations

import json

import pytest

from torchsync_lint.cli import main

PROBE = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    total += loss.item()
"""  # TSL301 (safe fix) at 5:18, TSL101 (unsafe fix) at 7:14
FIXED = PROBE.replace("x.to(device)", "x.to(device, non_blocking=True)")
CLEAN = "import torch\nx = torch.zeros(3)\n"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "probe.py").write_text(PROBE)
    for folder in ("tests", "legacy", "gen"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.py").write_text(PROBE)
    return tmp_path


def _paths(out: str) -> list[str]:
    return sorted({d["path"] for d in json.loads(out)})


def _findings(out: str) -> list[tuple[str, str]]:
    return sorted((d["path"], d["code"]) for d in json.loads(out))


# -- output ----------------------------------------------------------------------------------------

def test_output_format_concise_is_one_line_per_finding(project, capsys):
    code, out, _ = run(capsys, "--no-cache", "--output-format", "concise", "probe.py")
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("probe.py:5:18: TSL301 `x.to(device)` is a blocking") and not lines[0].endswith("[*]")
    assert lines[1].startswith("probe.py:7:14: TSL101 `loss.item()`")
    assert lines[2:] == ["Found 2 findings in 1 file checked."]  # no snippet, no caret
    _, text, _ = run(capsys, "--no-cache", "--format", "text", "probe.py")
    assert "        total += loss.item()" in text  # near miss: text keeps its snippet


def test_format_is_an_alias_of_output_format(project, capsys):
    a = run(capsys, "--no-cache", "--format", "json", "probe.py")
    b = run(capsys, "--no-cache", "--output-format", "json", "probe.py")
    assert a == b and json.loads(a[1])


def test_quiet_prints_the_findings_only_and_silent_nothing(project, capsys):
    code, out, err = run(capsys, "--no-cache", "-q", "probe.py")
    assert code == 1 and out.count("TSL") == 2 and "Found" not in out and "total += " not in out
    code, out, _ = run(capsys, "--no-cache", "--quiet", "--output-format", "concise", "probe.py")
    assert code == 1 and len(out.splitlines()) == 2
    code, out, err = run(capsys, "--no-cache", "--silent", "probe.py")
    assert (code, out, err) == (1, "", "")
    (project / "clean.py").write_text(CLEAN)
    assert run(capsys, "--no-cache", "--silent", "clean.py") == (0, "", "")
    code, out, err = run(capsys, "--no-cache", "--silent", "missing.py")  # exit 2 still says why
    assert code == 2 and out == "" and "missing.py:1:1: TSL902" in err
    code, out, err = run(capsys, "--no-cache", "--silent", "--fix", "missing.py")
    assert code == 2 and out == "" and "missing.py" in err
    code, out, err = run(capsys, "--no-cache", "--silent", "--select", "TSL8", "probe.py")
    assert code == 2 and "unknown rule selector" in err


# -- file selection and per-file ignores --------------------------------------------------------------

def test_exclude_replaces_and_extend_exclude_adds(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nexclude = ["legacy"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", ".")
    assert _paths(out) == ["gen/x.py", "probe.py", "tests/x.py"]
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--exclude", "gen", ".")
    assert _paths(out) == ["legacy/x.py", "probe.py", "tests/x.py"]  # the config's `legacy` is replaced
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--extend-exclude", "gen,tests", ".")
    assert _paths(out) == ["probe.py"]
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--extend-exclude", "gen", "--extend-exclude", "{tests,probe.py}", ".")
    assert _paths(out) == []  # repeatable, and a comma inside braces is part of its pattern


def test_per_file_ignores_on_the_command_line(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nexclude = []\n[tool.torchsync-lint.per-file-ignores]\n"gen/*" = ["TSL1"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--per-file-ignores", "tests/*:TSL101,TSL301", ".")
    found = _findings(out)
    assert ("tests/x.py", "TSL101") not in found and ("tests/x.py", "TSL301") not in found
    assert ("gen/x.py", "TSL101") in found  # --per-file-ignores replaces the config's table
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--per-file-ignores", "tests/*:TSL101", "--per-file-ignores", "legacy/*:TSL3", ".")
    found = _findings(out)
    assert ("tests/x.py", "TSL301") in found and ("tests/x.py", "TSL101") not in found
    assert ("legacy/x.py", "TSL101") in found and ("legacy/x.py", "TSL301") not in found
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--extend-per-file-ignores", "tests/*:TSL3,legacy/*:TSL1", ".")
    found = _findings(out)
    assert {code for path, code in found if path == "gen/x.py"} == {"TSL301"}  # the config's still holds
    assert ("tests/x.py", "TSL301") not in found and ("legacy/x.py", "TSL101") not in found


@pytest.mark.parametrize("value", ["tests/*", ":TSL101", "tests/*:TSL999"])
def test_a_malformed_per_file_ignore_is_a_usage_error(project, capsys, value):
    code, _, err = run(capsys, "--no-cache", "--per-file-ignores", value, "probe.py")
    assert code == 2 and ("PATTERN:CODES" in err or "unknown rule selector" in err), err


def test_cache_dir_holds_the_cache(project, capsys, tmp_path_factory):
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")  # a project: its results are cached
    cache = tmp_path_factory.mktemp("elsewhere") / "tsl"
    first = run(capsys, "--cache-dir", str(cache), "--format", "json", "probe.py")
    assert not (project / ".torchsync_cache").exists()
    assert any(p.suffix == ".json" for p in cache.rglob("*"))
    assert run(capsys, "--cache-dir", str(cache), "--format", "json", "probe.py") == first
    run(capsys, "--format", "json", "probe.py")
    assert (project / ".torchsync_cache").is_dir()  # near miss: without it, the default place


def test_a_cache_dir_inside_the_project_is_not_walked(project, capsys):
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    run(capsys, "--cache-dir", "mycache", "probe.py")
    (project / "mycache" / "stray.py").write_text(PROBE)  # what a walk would find there
    _, out, _ = run(capsys, "--no-cache", "--cache-dir", "mycache", "--show-files", ".")
    assert "mycache" not in out and "probe.py" in out


# -- fixing --------------------------------------------------------------------------------------------

def test_fix_only_applies_fixes_and_reports_nothing_remaining(project, capsys):
    code, out, err = run(capsys, "--no-cache", "--fix-only", "probe.py")
    assert code == 0, out + err
    assert (project / "probe.py").read_text() == FIXED
    assert "TSL101" not in out and "remain" not in out and "Fixed 1 finding" in out
    code, out, _ = run(capsys, "--no-cache", "--fix", "probe.py")  # near miss: --fix reports the TSL101 left
    assert code == 1 and "TSL101" in out


def test_fix_only_still_fails_on_an_unreadable_file(project, capsys):
    code, out, err = run(capsys, "--no-cache", "--fix-only", "probe.py", "missing.py")
    assert code == 2 and "missing.py:1:1: TSL902" in out + err and "TSL101" not in out + err


def test_show_fixes_lists_the_applied_fixes_per_file(project, capsys):
    code, out, _ = run(capsys, "--no-cache", "--fix", "--show-fixes", "probe.py", "tests/x.py")
    assert "- probe.py:\n    1 x TSL301 (blocking-host-to-device-copy)\n" in out
    assert "- tests/x.py:\n    1 x TSL301 (blocking-host-to-device-copy)\n" in out
    code, out, _ = run(capsys, "--no-cache", "--fix", "--show-fixes", "probe.py")
    assert "- probe.py:" not in out  # nothing left to fix: nothing listed


def test_exit_non_zero_on_fix(project, capsys):
    code, _, _ = run(capsys, "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "probe.py")
    assert code == 1 and (project / "probe.py").read_text() == FIXED
    code, _, _ = run(capsys, "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "probe.py")
    assert code == 0  # nothing changed this time


def test_quiet_fix_prints_no_summary(project, capsys):
    code, out, _ = run(capsys, "--no-cache", "--fix", "-q", "probe.py")
    assert code == 1 and "Fixed" not in out and "remain" not in out and "TSL101" in out


# -- did you mean --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "suggested"), [("selct", "select"), ("extend_select", "extend-select"), ("per-file-ignore", "per-file-ignores")])
def test_an_unknown_config_key_suggests_the_closest(project, capsys, key, suggested):
    (project / "pyproject.toml").write_text(f'[tool.torchsync-lint]\n{key} = ["TSL1"]\n')
    code, _, err = run(capsys, "probe.py")
    assert code == 2 and f"unknown key(s) in [tool.torchsync-lint]: {key}; did you mean '{suggested}'?" in err


def test_an_unrelated_unknown_key_gets_no_guess(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nbanana = 1\n')
    code, _, err = run(capsys, "probe.py")
    assert code == 2 and "banana" in err and "did you mean" not in err


def test_an_unknown_option_suggests_the_closest(project, capsys):
    code, _, err = run(capsys, "--selct", "TSL1", "probe.py")
    assert code == 2 and "unrecognized arguments: --selct" in err and "did you mean '--select'?" in err
    code, _, err = run(capsys, "--zzzzzz", "probe.py")
    assert code == 2 and "did you mean" not in err
