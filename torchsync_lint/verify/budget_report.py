"""Render a sync-budget run (budget_command.BudgetReport) as text, JSON, JUnit XML, GitHub
workflow annotations or SARIF 2.1.0. Pure functions of the report.

The text report lists, per script, only the lines that changed (rose, fell, or were out of
reach of one of the two runs), each with the calls from the script down to the sync; JSON has
every line. JUnit has one test case per script; GitHub annotations and SARIF results are at
the lines that rose.
"""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from torchsync_lint.reporters.github import workflow_command
from torchsync_lint.reporters.junit import xml_safe
from torchsync_lint.verify.budget import ERROR, FELL, KINDS, NOT_RUN, ROSE, SAME, SKIPPED, BudgetReport, LineCount, Row, ScriptResult
from torchsync_lint.verify.budget_file import budget_root

UPDATE_HINT = "run with --update-budget to lower the budget"
ACCEPT_HINT = "remove the new syncs, or accept them with --update-budget"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def render(report: BudgetReport, fmt: str) -> str:
    renderer = {"json": render_json, "junit": render_junit, "github": render_github, "sarif": render_sarif}.get(fmt, render_text)
    return renderer(report)


# --- text --------------------------------------------------------------------------------------


def render_text(report: BudgetReport) -> str:
    out: list[str] = []
    for result in report.results:
        out += _script_text(result)
    out.append(summary_line(report))
    return "\n".join(out) + "\n"


def _script_text(result: ScriptResult) -> list[str]:
    head = f"{result.path}: {result.status.upper() if result.status in (ROSE, ERROR) else result.status}"
    measured = result.measured or result.budget
    if measured is not None:
        head += f" ({measured.window} steady steps, args: {args_text(measured.args)}"
        if result.comparison is not None:
            head += f"; syncs per step {_num(result.comparison.total_budget)} -> {_num(result.comparison.total_now)}"
        elif result.measured is not None:
            head += f"; {_num(result.measured.total)} syncs per step"
        head += ")"
    lines = [head]
    if result.detail:
        lines += ["  " + text for text in result.detail.strip().splitlines()[-3:]]
    rows = [row for row in (result.comparison.rows if result.comparison else []) if row.status != SAME or row.budget.line != row.now.line]
    if result.comparison is None and result.measured is not None:  # a new entry: everything it has
        rows = [Row("new", "new", None, line) for line in result.measured.lines]
    if rows:
        table = [("", "WHERE", "KIND", "BUDGET", "NOW", "CHANGE")]
        for row in rows:
            line = row.line
            status = "moved" if row.status == SAME else row.status
            change = row.change if row.status != SAME else f"moved from line {row.budget.line}"
            table.append((status, line.where(), line.kind, _rate(row.budget), _rate(row.now), change))
        widths = [max(len(r[i]) for r in table) for i in range(5)]
        for i, cells in enumerate(table):
            lines.append("  " + "  ".join(cell.ljust(widths[j]) for j, cell in enumerate(cells[:5])) + "  " + cells[5])
            if i and rows[i - 1].line.chain:
                lines.append("  " + " " * widths[0] + "  calls: " + " > ".join(rows[i - 1].line.chain))
    comparison = result.comparison
    if comparison is not None and comparison.total_rose:
        lines.append(f"  total {_num(comparison.total_now)} syncs per step > budget {_num(comparison.total_budget)}"
                     + (f" + tolerance {_num(result.budget.tolerance)}" if result.budget and result.budget.tolerance else ""))
    return lines + [""]


def summary_line(report: BudgetReport) -> str:
    counts = {status: sum(1 for r in report.results if r.status == status) for status in {r.status for r in report.results}}
    scripts = len(report.results)
    parts = [f"{n} {status}" for status, n in sorted(counts.items())]
    prefix = f"sync budget {report.budget_path} ({report.backend}): {scripts} script(s), " + ", ".join(parts)
    if counts.get(ERROR):
        return prefix + "; ERROR: fix the scripts above (exit 2)" + ("; the budget was not written" if report.update else "")
    if report.write_error is not None:
        return prefix + f"; ERROR: the budget could not be written ({report.write_error}); it is as it was (exit 2)"
    if report.update:
        return prefix + ("; written" if report.written else "; the file is unchanged")
    if counts.get(ROSE):
        return prefix + f"; FAIL: syncs per step rose: {ACCEPT_HINT}"
    if counts.get(FELL):
        return prefix + f"; OK, and syncs fell: {UPDATE_HINT}"
    return prefix + "; OK"


def _rate(line: LineCount | None) -> str:
    return "-" if line is None else line.rate_text()


def _num(value: float) -> str:
    return f"{value:g}"


def args_text(args: list[str]) -> str:
    """A script's arguments as a shell would take them."""
    import shlex

    return shlex.join(args) if args else "(none)"


# --- JSON --------------------------------------------------------------------------------------


def _line_json(line: LineCount | None) -> dict | None:
    if line is None:
        return None
    return {
        "file": line.file, "line": line.line, "function": line.function, "code": line.code, "kind": line.kind,
        "count": line.count, "every": line.period.every, "exact": line.period.exact, "via": line.via, "calls": list(line.chain),
    }


def render_json(report: BudgetReport) -> str:
    scripts = []
    for result in report.results:
        entry: dict = {"path": result.path, "status": result.status, "detail": result.detail or None}
        measured = result.measured
        entry["window"] = measured.window if measured else None
        entry["args"] = measured.args if measured else (result.budget.args if result.budget else None)
        comparison = result.comparison
        entry["total"] = {
            "budget": comparison.total_budget if comparison else (result.budget.total if result.budget else None),
            "now": measured.total if measured else None,
            "rose": bool(comparison and comparison.total_rose),
        }
        if comparison is not None:
            entry["lines"] = [{"status": r.status, "change": r.change, "budget": _line_json(r.budget), "now": _line_json(r.now)} for r in comparison.rows]
        elif measured is not None:
            entry["lines"] = [{"status": "new", "change": "new", "budget": None, "now": _line_json(line)} for line in measured.lines]
        else:
            entry["lines"] = []
        scripts.append(entry)
    data = {"budget": report.budget_path, "backend": report.backend, "update": report.update, "written": report.written, "write_error": report.write_error,
            "exit_code": report.exit_code, "scripts": scripts}
    return json.dumps(data, indent=2) + "\n"


# --- JUnit -------------------------------------------------------------------------------------

SUITE = "torchsync-lint sync budget"


def render_junit(report: BudgetReport) -> str:
    root = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(root, "testsuite", name=SUITE)
    failures = errors = skipped = 0
    for result in report.results:
        case = ET.SubElement(suite, "testcase", name=xml_safe(result.path), classname="sync-budget", file=xml_safe(result.path))
        text = xml_safe("\n".join(_script_text(result)))
        if result.status == ROSE:
            failures += 1
            node = ET.SubElement(case, "failure", message=xml_safe(_rose_message(result)), type="sync-budget")
            node.text = text
        elif result.status in (ERROR, NOT_RUN):
            errors += 1
            node = ET.SubElement(case, "error", message=xml_safe(result.detail.strip().splitlines()[-1] if result.detail else result.status), type=result.status)
            node.text = text
        elif result.status == SKIPPED:
            skipped += 1
            ET.SubElement(case, "skipped", message=xml_safe(result.detail))
        else:
            ET.SubElement(case, "system-out").text = text
    for name, value in (("tests", len(report.results)), ("failures", failures), ("errors", errors), ("skipped", skipped)):
        suite.set(name, str(value))
        if name != "skipped":
            root.set(name, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _rose_message(result: ScriptResult) -> str:
    rose = [row for row in result.comparison.rows if row.status == ROSE] if result.comparison else []
    parts = [f"{row.line.where()} {row.line.kind}: {row.change}" for row in rose]
    if result.comparison is not None and result.comparison.total_rose:
        parts.append(f"total {_num(result.comparison.total_budget)} -> {_num(result.comparison.total_now)} syncs per step")
    return "syncs per step rose: " + "; ".join(parts)


# --- GitHub annotations ------------------------------------------------------------------------


def render_github(report: BudgetReport) -> str:
    out = []
    for result in report.results:
        if result.status in (ERROR, NOT_RUN):
            out.append(_annotation("error", result.path, None, f"sync budget: {result.status}", result.detail.strip() or result.status))
        for row in result.comparison.rows if result.comparison else []:
            line = row.line
            if row.status == ROSE:
                message = f"{line.kind} sync rose: {row.change}. {_calls(line)}{_sentence(ACCEPT_HINT)}"
                out.append(_annotation("error", line.file, line.line, f"sync budget: {line.kind} rose", message))
            elif row.status == FELL:
                message = f"{line.kind} sync fell: {row.change}. {_sentence(UPDATE_HINT)}"
                out.append(_annotation("notice", line.file, line.line or None, f"sync budget: {line.kind} fell", message))
        if _only_total_rose(result):
            out.append(_annotation("error", result.path, None, "sync budget: total rose", _rose_message(result)))
    return "".join(item + "\n" for item in out)


def _only_total_rose(result: ScriptResult) -> bool:
    """The total rose with no line above its budget (lines within the tolerance add up): the
    annotation then goes on the script, since no line is to blame alone."""
    comparison = result.comparison
    return comparison is not None and comparison.total_rose and not any(row.status == ROSE for row in comparison.rows)


def _calls(line: LineCount) -> str:
    return f"Calls: {' > '.join(line.chain)}. " if line.chain else ""


def _annotation(level: str, path: str, line: int | None, title: str, message: str) -> str:
    props = {"file": path} if line is None else {"file": path, "line": line}
    props["title"] = title
    return workflow_command(level, props, message)


# --- SARIF -------------------------------------------------------------------------------------


def render_sarif(report: BudgetReport) -> str:
    import os
    from pathlib import Path

    from torchsync_lint import __version__
    from torchsync_lint.reporters.sarif import SCHEMA, SRCROOT, _artifact

    root = Path(budget_root(report.budget_path))
    rule_ids = [f"sync-budget/{kind}" for kind in KINDS] + ["sync-budget/total"]
    index = {rule: i for i, rule in enumerate(rule_ids)}
    results, notes = [], []
    for result in report.results:
        if result.status in (ERROR, NOT_RUN):
            notes.append({"level": "error", "message": {"text": f"{result.path}: {result.detail.strip() or result.status}"}})
        comparison = result.comparison
        for row in comparison.rows if comparison else []:
            if row.status != ROSE:
                continue
            line = row.line
            location = {"artifactLocation": _artifact(os.path.join(root, line.file), root)}
            if line.line:
                location["region"] = {"startLine": line.line}
            rule = f"sync-budget/{line.kind}"
            results.append({
                "ruleId": rule, "ruleIndex": index[rule], "level": "error",
                "message": {"text": f"{line.kind} sync rose: {row.change}. {_calls(line)}{_sentence(ACCEPT_HINT)}"},
                "locations": [{"physicalLocation": location}],
            })
        if _only_total_rose(result):
            results.append({
                "ruleId": "sync-budget/total", "ruleIndex": index["sync-budget/total"], "level": "error",
                "message": {"text": _rose_message(result)},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(os.path.join(root, result.path), root)}}],
            })
    rules = [{"id": rule, "name": rule.split("/")[1], "shortDescription": {"text": _RULE_TEXT.get(rule.split("/")[1], "")}} for rule in rule_ids]
    run = {
        "tool": {"driver": {"name": "torchsync-lint sync budget", "version": __version__, "rules": rules}},
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": not notes, "toolExecutionNotifications": notes}],
        "results": results,
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2, ensure_ascii=False) + "\n"


_RULE_TEXT = {
    "host-read": "More host reads of device tensors per step (.item(), float(), .tolist(), .cpu()) than the budget allows",
    "truthiness": "More truth tests of device tensors per step (if t:, assert t) than the budget allows",
    "format": "More formatting of device tensors per step (print, f-strings, str) than the budget allows",
    "synchronize": "More explicit synchronize calls per step than the budget allows",
    "dynamic-shape": "More data-dependent shapes per step (nonzero, x[mask], unique, bincount) than the budget allows",
    "blocking-copy": "More blocking host-to-device copies per step than the budget allows",
    "logger": "More syncs inside logging libraries per step than the budget allows",
    "metric": "More syncs inside metrics libraries per step than the budget allows",
    "distributed": "More host waits of collectives per step than the budget allows",
    "device-sync": "More unlabelled device syncs per step (cuda backend) than the budget allows",
    "total": "More syncs per step in the whole script than the budget allows",
}
