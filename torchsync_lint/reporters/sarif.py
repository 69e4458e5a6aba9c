"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning and SARIF viewers.

* `tool.driver.rules` is the whole registry (one reportingDescriptor per rule, with the docs
  as `help`), so `ruleIndex` is stable across runs.
* Results carry a relative `artifactLocation.uri` (relative to `%SRCROOT%`, the working
  directory) and a region in Unicode code points (`columnKind`), end column exclusive as in
  SARIF. A fix is included when it is a self-contained text edit; one that also needs a new
  import is left to `torchsync-lint --fix` (a viewer applying it would leave a NameError).
* Notebooks: the artifact is the `.ipynb` file; a region's lines count in one cell, named by
  the result's `cell` property and a logical location `cell N`. Their fixes are left out (a
  viewer would apply them to the notebook's JSON lines).
* Files we could not lint (TSL90x) are not rule violations: they become
  `invocations[0].toolExecutionNotifications` (level error, `executionSuccessful: false`),
  described by `tool.driver.notifications`, so code scanning does not open alerts for them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from torchsync_lint import __version__
from torchsync_lint.errors import FILE_ERRORS
from torchsync_lint.reporters import register
from torchsync_lint.types import Finding

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"


def short_description(rule) -> str:
    """The first sentence of the rule's summary: viewers show it as the rule's title (the
    message template, with `…` for its placeholders, read as a truncated sentence)."""
    summary = rule.summary()
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z`])", summary)
    return summary[: match.start()] if match else summary


def _rule_descriptor(rule) -> dict:
    from torchsync_lint.docs import family, fix_availability

    docs = rule.docs()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": short_description(rule)},
        "fullDescription": {"text": " ".join(rule.section("Why is this bad?").split()) or rule.summary()},
        "help": {"text": docs, "markdown": docs},
        "helpUri": rule.docs_url(),
        "defaultConfiguration": {"level": "warning", "enabled": bool(rule.default_enabled)},
        "properties": {
            "tags": ["performance", "pytorch", family(rule)],
            "fixable": bool(rule.fix_title),
            "fixApplicability": fix_availability(rule),
            "runtimeObservable": bool(rule.runtime_observable),
        },
    }


def _notification_descriptors() -> list[dict]:
    return [
        {"id": code, "name": name, "shortDescription": {"text": text}}
        for code, (name, text) in sorted(FILE_ERRORS.items())
    ]


def _artifact(path: str, root: Path) -> dict:
    """A URI relative to %SRCROOT% when the file is under it, else an absolute file URI."""
    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(PurePosixPath(*rel.parts).as_posix()), "uriBaseId": SRCROOT}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _fixes(finding: Finding, artifact: dict) -> list[dict]:
    fix = finding.fix
    if fix is None or fix.imports or not fix.edits or finding.cell is not None:
        return []  # a notebook's regions count in a cell, not in the file a viewer would edit
    replacements = [
        {
            "deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
            "insertedContent": {"text": e.content},
        }
        for e in fix.edits
    ]
    return [
        {
            "description": {"text": f"{fix.title} ({fix.applicability.value} fix)"},
            "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
            "properties": {"applicability": fix.applicability.value},
        }
    ]


def _result(finding: Finding, rule_index: dict[str, int], root: Path) -> dict:
    artifact = _artifact(finding.path, root)
    result = {
        "ruleId": finding.code,
        "level": "warning",
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact,
                    "region": _region(finding.line, finding.column, finding.end_line, finding.end_column),
                }
            }
        ],
    }
    if finding.cell is not None:
        _in_cell(result, finding.cell)
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    fixes = _fixes(finding, artifact)
    if fixes:
        result["fixes"] = fixes
    return result


def _in_cell(obj: dict, cell: int) -> None:
    """A notebook position: the region's lines count in cell ``cell`` (1-based over all
    cells), named as a logical location and as the `cell` property."""
    obj["locations"][0]["logicalLocations"] = [{"name": f"cell {cell}"}]
    obj["properties"] = {**obj.get("properties", {}), "cell": cell}


def _notification(error: Finding, notification_index: dict[str, int], root: Path) -> dict:
    if error.cell is not None:
        note = _notification(replace(error, cell=None), notification_index, root)
        _in_cell(note, error.cell)
        return note
    return {
        "level": "error",
        "message": {"text": f"{error.path}: {error.message}"},
        "descriptor": {"id": error.code, "index": notification_index[error.code]},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(error.path, root),
                    "region": {"startLine": error.line, "startColumn": error.column},
                }
            }
        ],
    }


@register("sarif")
def render(results, options) -> str:
    # The rules' docs are loaded here, not at import: every format is registered on each run.
    from torchsync_lint.rule import DOCS_URL, load_rules

    root = Path(os.path.abspath(options.get("root") or os.getcwd()))
    rules = load_rules()
    rule_index = {code: i for i, code in enumerate(rules)}
    notification_index = {code: i for i, code in enumerate(sorted(FILE_ERRORS))}
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    errors = sorted((e for r in results for e in r.errors), key=lambda f: f.sort_key)
    run = {
        "tool": {
            "driver": {
                "name": "torchsync-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": DOCS_URL.split("/blob/")[0],
                "rules": [_rule_descriptor(rule) for rule in rules.values()],
                "notifications": _notification_descriptors(),
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "invocations": [
            {
                "executionSuccessful": not errors,
                "toolExecutionNotifications": [_notification(e, notification_index, root) for e in errors],
            }
        ],
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, rule_index, root) for f in findings],
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
