"""`.pre-commit-hooks.yaml` and the GitHub workflow: well-formed, and every torchsync-lint
command line in them is one our CLI accepts."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from torchsync_lint.cli import build_parser
from torchsync_lint.reporters import load_formats

yaml = pytest.importorskip("yaml", reason="PyYAML comes with pre-commit (dev extra)")
ROOT = Path(__file__).resolve().parent.parent


def _parse_cli(argv: list[str]):
    assert argv[0] == "torchsync-lint", argv
    args = build_parser().parse_args(argv[1:])
    if args.command == "check":
        assert args.format in load_formats()
    return args


def test_pre_commit_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"torchsync-lint", "torchsync-lint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"] and "types" not in hook and hook["require_serial"] is True
        args = _parse_cli([*shlex.split(hook["entry"]), *hook.get("args", []), "a.py", "b.py"])
        assert args.command == "check" and args.paths == ["a.py", "b.py"] and args.force_exclude
    assert not _parse_cli(shlex.split(hooks["torchsync-lint"]["entry"])).fix
    assert _parse_cli(shlex.split(hooks["torchsync-lint-fix"]["entry"])).fix


def test_lint_workflow_uploads_sarif_from_a_valid_command():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "lint.yml").read_text())
    steps = workflow["jobs"]["torchsync-lint"]["steps"]
    commands = [s["run"] for s in steps if str(s.get("run", "")).startswith("torchsync-lint")]
    formats = {_parse_cli(shlex.split(c)).format for c in commands}
    assert "sarif" in formats
    upload = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")]
    assert upload and upload[0]["if"] == "success() || failure()"
    sarif_cmd = next(c for c in commands if "sarif" in c)
    assert _parse_cli(shlex.split(sarif_cmd)).output_file == upload[0]["with"]["sarif_file"]
    assert workflow["jobs"]["torchsync-lint"]["permissions"]["security-events"] == "write"


def test_gpu_workflow_verify_command_parses_and_writes_both_reports():
    """verify-gpu.yml never runs in CI (no GPU): at least its command must be one the CLI accepts."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "verify-gpu.yml").read_text())
    runs = [s["run"] for s in workflow["jobs"]["verify-cuda"]["steps"] if "torchsync-lint verify" in str(s.get("run", ""))]
    (script,) = runs
    line = next(part for part in script.replace("\\\n", " ").splitlines() if "torchsync-lint verify" in part)
    args = _parse_cli(shlex.split(line.strip()))
    assert args.command == "verify" and args.backend == "cuda" and args.measure
    assert args.format == "markdown" and args.output_file.endswith(".md") and args.json_output.endswith(".json")


def test_the_sync_budget_workflow_checks_a_committed_budget_with_annotations():
    """docs/ci/sync-budget.yml (README, "Sync budget in CI"): users copy it as is."""
    workflow = yaml.safe_load((ROOT / "docs" / "ci" / "sync-budget.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "pull_request" in triggers
    steps = workflow["jobs"]["sync-budget"]["steps"]
    (command,) = [s["run"] for s in steps if str(s.get("run", "")).startswith("torchsync-lint verify")]
    args = _parse_cli(shlex.split(command))
    assert args.budget == "syncs.toml" and not args.update_budget and not args.paths
    assert args.backend == "emulate" and args.format == "github" and args.json_output == "sync-budget.json"
    upload = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload and upload[0]["with"]["path"] == args.json_output


def test_ci_checks_the_committed_fixture_budget():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "--budget" in line and not line.startswith("#")]
    (line,) = lines
    args = _parse_cli(shlex.split(line.replace(".venv/bin/", "")))
    assert args.budget == "budgets/fixtures.toml" and args.paths == ["fixtures/"] and not args.update_budget and args.backend == "emulate"
    assert (ROOT / args.budget).is_file()
