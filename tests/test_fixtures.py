"""Level 2: each fixture script reports exactly its `# expect:` markers, and runs on CPU."""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.api import lint_file
from torchsync_lint.config import Config
from torchsync_lint.markers import read_markers, read_pragmas

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if not p.name.endswith(".fixed.py"))
IDS = [str(p.relative_to(ROOT / "fixtures")) for p in FIXTURES]


def test_there_are_fixtures_for_every_family():
    families = {p.parent.name for p in FIXTURES}
    assert {"host_sync", "clean"} <= families


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_findings_equal_markers(path):
    result = lint_file(str(path), Config())
    assert result.errors == []
    got = collections.Counter((f.line, f.code) for f in result.findings)
    want = collections.Counter((m.line, m.code) for m in read_markers(str(path)) if m.kind == "expect")
    assert got == want, f"unexpected: {sorted((got - want).elements())}; missing: {sorted((want - got).elements())}"


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.parent.name == "clean"], ids=lambda p: p.name)
def test_clean_fixtures_have_no_markers_and_no_findings(path):
    assert read_markers(str(path)) == []
    assert lint_file(str(path), Config()).findings == []


def _missing_requirement(path: Path) -> str | None:
    for module in filter(None, read_pragmas(str(path)).get("requires", "").split(",")):
        if importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_fixture_runs_on_cpu_and_reports_a_result(path):
    missing = _missing_requirement(path)
    if missing:
        pytest.skip(f"needs {missing}")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, str(path), "--steps", "3"], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    assert isinstance(json.loads(last[len("RESULT "):]), dict)


def test_cli_on_the_fixtures_directory_reports_exactly_the_markers(monkeypatch, capsys):
    """`torchsync-lint fixtures/` from the repository root (its pyproject excludes *.fixed.py)."""
    from torchsync_lint.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["check", "--format", "json", "fixtures/"]) == 1
    got = collections.Counter((d["path"], d["line"], d["code"]) for d in json.loads(capsys.readouterr().out))
    want = collections.Counter(
        (str(p.relative_to(ROOT)), m.line, m.code) for p in FIXTURES for m in read_markers(str(p)) if m.kind == "expect"
    )
    assert got == want
