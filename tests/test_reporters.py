"""The machine-readable formats: sarif, github, junit (plus a CLI round trip for each)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from torchsync_lint.api import FileResult, lint_paths
from torchsync_lint.config import Config
from torchsync_lint.errors import file_error
from torchsync_lint.reporters import load_formats
from torchsync_lint.rule import load_rules
from torchsync_lint.types import Applicability, Edit, Finding, Fix

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
HAZARDS = DATA / "hazards.py"
FORMATS = load_formats()
RULES = load_rules()


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _hazard_results() -> list[FileResult]:
    results = lint_paths([HAZARDS.relative_to(ROOT).as_posix()], Config())
    assert results[0].findings, "the test data must produce findings"
    return results


def _finding(path="train.py", line=3, column=5, code="TSL101", message="`loss.item()` reads", fix=None, end=(3, 16)):
    return Finding(path, line, column, end[0], end[1], code, RULES[code].name, message, fix=fix)


def _render(fmt: str, results, **options) -> str:
    return FORMATS[fmt](results, options)


# -- SARIF ---------------------------------------------------------------------------------
def _schema_validate(log: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)


def test_sarif_matches_the_official_schema_and_the_findings(in_root):
    results = _hazard_results()
    log = json.loads(_render("sarif", results))
    _schema_validate(log)
    (run,) = log["runs"]
    assert log["version"] == "2.1.0"
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchsync-lint" and driver["version"] and driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == list(RULES)
    findings = results[0].findings
    assert len(run["results"]) == len(findings)
    for res, f in zip(run["results"], findings):
        assert res["ruleId"] == f.code
        assert driver["rules"][res["ruleIndex"]]["id"] == f.code
        assert res["level"] == "warning" and res["message"]["text"] == f.message
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "tests/data/hazards.py", "uriBaseId": "%SRCROOT%"}
        assert loc["region"] == {"startLine": f.line, "startColumn": f.column, "endLine": f.end_line, "endColumn": f.end_column}
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_rule_descriptors_come_from_the_registry():
    log = json.loads(_render("sarif", []))
    _schema_validate(log)
    for descriptor in log["runs"][0]["tool"]["driver"]["rules"]:
        rule = RULES[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["helpUri"] == rule.docs_url()
        assert descriptor["help"]["markdown"] == rule.docs() and "## Why is this bad?" in descriptor["help"]["text"]
        assert descriptor["fullDescription"]["text"] == " ".join(rule.section("Why is this bad?").split())
        # The title viewers show: the rule's one-sentence summary, not its message template
        # (whose placeholders read as `…`).
        short = descriptor["shortDescription"]["text"]
        assert "…" not in short and short.startswith("Flags ") and short.endswith(".")
        assert short in rule.summary() and short != rule.message
        assert descriptor["properties"]["fixable"] is bool(rule.fix_title)
        assert descriptor["defaultConfiguration"]["enabled"] is rule.default_enabled
    assert log["runs"][0]["results"] == []


def test_sarif_fixes_are_replacements_and_import_needing_fixes_are_left_out():
    plain = Fix("Add `non_blocking=True`", (Edit(3, 10, 3, 20, "x.to(device, non_blocking=True)"),), Applicability.SAFE)
    needs_import = Fix("Keep it on device", (Edit(4, 5, 4, 16, "torch.zeros(())"),), Applicability.UNSAFE, ("torch",))
    results = [FileResult("a b/train.py", [
        _finding("a b/train.py", 3, 10, fix=plain, end=(3, 20)),
        _finding("a b/train.py", 4, 5, fix=needs_import, end=(4, 16)),
    ])]
    log = json.loads(_render("sarif", results, root=str(ROOT)))
    _schema_validate(log)
    with_fix, without = log["runs"][0]["results"]
    (fix,) = with_fix["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "a%20b/train.py"
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 3, "startColumn": 10, "endLine": 3, "endColumn": 20},
        "insertedContent": {"text": "x.to(device, non_blocking=True)"},
    }]
    assert fix["properties"]["applicability"] == "safe" and "Add `non_blocking=True`" in fix["description"]["text"]
    assert "fixes" not in without


def test_sarif_file_errors_are_tool_notifications_not_results(tmp_path):
    results = [
        FileResult("bad.py", errors=[file_error("bad.py", "TSL900", "cannot parse: bad input", 2, 7)]),
        FileResult("ok.py", [_finding("ok.py")]),
    ]
    log = json.loads(_render("sarif", results, root=str(tmp_path)))
    _schema_validate(log)
    run = log["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["TSL101"]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["descriptor"]["id"] == "TSL900"
    assert run["tool"]["driver"]["notifications"][note["descriptor"]["index"]]["id"] == "TSL900"
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 7}


def test_sarif_path_outside_the_root_is_an_absolute_uri(tmp_path):
    outside = tmp_path / "elsewhere" / "t.py"
    log = json.loads(_render("sarif", [FileResult(str(outside), [_finding(str(outside))])], root=str(tmp_path / "repo")))
    _schema_validate(log)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": outside.as_uri()}


# -- GitHub annotations --------------------------------------------------------------------
_COMMAND = re.compile(r"^::(?P<level>warning|error) (?P<props>[^:]*)::(?P<message>.*)$")


def _unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def _parse_commands(text: str) -> list[tuple[str, dict, str]]:
    out = []
    for line in text.splitlines():
        m = _COMMAND.match(line)
        assert m, line
        props = dict(kv.split("=", 1) for kv in m["props"].split(","))
        out.append((m["level"], {k: _unescape(v) for k, v in props.items()}, _unescape(m["message"])))
    return out


def test_github_annotations_one_per_finding(in_root):
    results = _hazard_results()
    commands = _parse_commands(_render("github", results))
    findings = results[0].findings
    assert len(commands) == len(findings)
    for (level, props, message), f in zip(commands, findings):
        assert level == "warning" and message == f.message
        assert props == {
            "file": f.path, "line": str(f.line), "col": str(f.column),
            "endLine": str(f.end_line), "endColumn": str(f.end_column), "title": f"{f.code} {f.name}",
        }


def test_github_escaping_round_trips():
    nasty_path = "dir,with:odd%/t.py"
    message = "100% `a`\nsecond line\r, with: colon"
    out = _render("github", [FileResult(nasty_path, [_finding(nasty_path, message=message)])])
    assert out.count("\n") == 1 and "\r" not in out  # one command per finding, on one line
    assert "file=dir%2Cwith%3Aodd%25/t.py" in out
    assert out.rstrip("\n").endswith("::100%25 `a`%0Asecond line%0D, with: colon")
    ((level, props, got),) = _parse_commands(out)
    assert props["file"] == nasty_path and got == message


def test_github_file_errors_are_error_annotations():
    out = _render("github", [FileResult("bad.py", errors=[file_error("bad.py", "TSL900", "cannot parse: x", 4, 2)])])
    ((level, props, message),) = _parse_commands(out)
    assert level == "error" and props["title"] == "TSL900 syntax-error" and props["line"] == "4"


# -- JUnit ---------------------------------------------------------------------------------
def test_junit_one_suite_per_file_and_a_case_per_finding(in_root):
    results = _hazard_results()
    root = ET.fromstring(_render("junit", results))
    findings = results[0].findings
    assert root.tag == "testsuites" and root.get("tests") == str(len(findings)) and root.get("failures") == str(len(findings))
    (suite,) = root
    assert suite.get("name") == "tests/data/hazards.py"
    cases = suite.findall("testcase")
    assert [(c.get("name"), int(c.get("line"))) for c in cases] == [(f"torchsync-lint.{f.code}", f.line) for f in findings]
    assert all(c.get("classname") == "tests/data/hazards" for c in cases)
    first = cases[0].find("failure")
    assert first.get("message") == findings[0].message
    assert first.text == f"line {findings[0].line}, col {findings[0].column}, {findings[0].message}"


def test_junit_escapes_markup_and_control_characters():
    message = 'a < b && "c" > d \x0c end'
    results = [
        FileResult("x&y.py", [_finding("x&y.py", message=message)]),
        FileResult("bad.py", errors=[file_error("bad.py", "TSL901", "cannot decode: \x00")]),
    ]
    text = _render("junit", results)
    root = ET.fromstring(text)  # parses: well-formed despite <, &, quotes and a form feed
    suites = {s.get("name"): s for s in root}
    failure = suites["x&y.py"].find("testcase/failure")
    assert failure.get("message") == 'a < b && "c" > d \ufffd end'
    assert suites["bad.py"].get("errors") == "1" and suites["bad.py"].find("testcase/error") is not None
    assert root.get("errors") == "1" and root.get("failures") == "1"


def test_junit_clean_run_has_one_passing_case():
    root = ET.fromstring(_render("junit", [FileResult("clean.py")]))
    assert root.get("tests") == "1" and root.get("failures") == "0"
    (case,) = root.iter("testcase")
    assert list(case) == []


# -- through the CLI -----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["sarif", "github", "junit", "json", "text"])
def test_cli_output_file_and_exit_code(tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "torchsync_lint", "check", "--isolated", "--format", fmt, "--output-file", str(out), "tests/data/hazards.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    text = out.read_text(encoding="utf-8")
    expected = len(_hazard_results_at_root())
    if fmt == "sarif":
        assert len(json.loads(text)["runs"][0]["results"]) == expected
    elif fmt == "github":
        assert len(_parse_commands(text)) == expected
    elif fmt == "junit":
        assert len(ET.fromstring(text).findall("testsuite/testcase")) == expected
    elif fmt == "json":
        assert len(json.loads(text)) == expected
    else:
        assert text.count(": TSL") == expected


def _hazard_results_at_root():
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        return _hazard_results()[0].findings
    finally:
        os.chdir(old)
