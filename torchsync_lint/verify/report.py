"""Render verification entries as text, JSON or JUnit XML (pure functions of the entries)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from xml.etree import ElementTree as ET

from torchsync_lint.reporters.junit import xml_safe
from torchsync_lint.verify.matching import Entry

SCRIPT_STATUSES = ("crashed", "timeout", "early-exit", "interrupted", "internal-error", "skipped", "lint-error", "stopped", "note")
INFO_STATUSES = ("stopped", "note")  # script-level, but the run went as it should

# What the marks in the text table mean; the legend under it lists those it shows.
LEGEND = (
    ("confirmed", "the hazard of the finding/marker happened at its line at runtime (a finding in an imported module: at the script line that reaches it, `observed at`)"),
    ("unconfirmed", "no runtime event at the line confirms it (FAIL when a `# expect:` marker says it should)"),
    ("not-observable", "the rule's hazard does not show up in a single process (e.g. it needs NCCL)"),
    ("runtime-only", "a sync or pipeline hazard at a line with no finding: a linter false negative (FAIL in a script with no markers)"),
    ("expect-sync", "a line marked `# expect-sync:` (a known false negative): any sync there confirms it"),
    ("FAIL", "this row makes the exit status 1"),
    ("stopped", "the step clock ended the script after its warm-up and --steps steady steps (evidence kept)"),
    ("note", "what the verifier noticed while containing the run (signals, processes left running, output cut)"),
    ("timeout", "no exit within --timeout; the evidence recorded until then is kept when the script could be stopped"),
    ("crashed", "the script (or the harness) failed; the last line of its traceback is shown"),
    ("early-exit", "the script exited with status 0 before finishing its steps (an `os._exit(0)`), or a fixture without its `RESULT {json}` line"),
    ("interrupted", "the verifier was interrupted (Ctrl-C, SIGTERM) before or while this script ran"),
    ("internal-error", "the verifier failed on this script; the others were still verified"),
    ("skipped", "a `requires=` package of the fixture is not importable"),
    ("lint-error", "the static linter could not check the file (the runtime check still ran)"),
    ("fixed-compared", "syncs per steady step of the script before -> after its fixed version"),
    ("xN", "events at the line over the whole run (setup and warm-up included)"),
    ("N/step", "events per steady-state step: after the warm-up, not counting the last step and epoch starts"),
    ("measured", "--measure: step times of the original, the whole fix and each fix applied alone (median of --repeats alternating fresh runs, spread = max - min)"),
    ("not-measured", "--measure found no fixed version, or no step times"),
    ("cost", "--measure: step time saved by the whole fix (on a script) or by the finding's fix applied alone, in ms and % of the step"),
)


def render(entries: list[Entry], fmt: str, scripts: list[str], backend: str, environment: dict | None = None) -> str:
    if fmt == "json":
        return render_json(entries)
    if fmt == "junit":
        return render_junit(entries, scripts)
    if fmt == "markdown":
        return render_markdown(entries, scripts, backend, environment or {})
    return render_text(entries, scripts, backend)


# Environment fields shown at the top of a markdown report, in this order.
ENVIRONMENT_FIELDS = (
    ("device", "device"),
    ("torch", "torch"),
    ("cuda_runtime", "CUDA runtime (torch.version.cuda)"),
    ("torchmetrics", "torchmetrics"),
    ("python", "Python"),
    ("platform", "platform"),
    ("torchsync_lint", "torchsync-lint"),
    ("date_utc", "date"),
    ("command", "command"),
)


def render_markdown(entries: list[Entry], scripts: list[str], backend: str, environment: dict) -> str:
    """A results page to commit (docs/verification/): what it ran on, then one row per entry."""
    lines = ["# torchsync-lint verify results", "", "| | |", "|---|---|"]
    for key, label in ENVIRONMENT_FIELDS:
        value = environment.get(key)
        lines.append(f"| {label} | {_md(str(value)) if value is not None else 'unknown'} |")
    lines += ["", summary_line(entries, scripts, backend), ""]
    lines += ["| location | code | status | evidence | cost ms/step | % of step | detail |", "|---|---|---|---|---|---|---|"]
    for entry in _sorted(entries):
        where = f"`{entry.path}:{entry.line}`" if entry.line else f"`{entry.path}`"
        code = entry.code or ("expect-sync" if entry.marker == "expect-sync" else "")
        status = entry.status + (" **FAIL**" if entry.failed else "")
        evidence = "; ".join(
            f"{item.kind} `{item.op}` " + (f"{item.per_step:g}/step" if item.per_step is not None else f"x{item.count}")
            for item in entry.evidence
        )
        cost = "" if entry.cost_ms_per_step is None else f"{entry.cost_ms_per_step:.3f}"
        pct = "" if entry.cost_pct is None else f"{entry.cost_pct:.1f}"
        detail = entry.detail.strip().splitlines()[-1] if entry.detail else ""
        lines.append(f"| {where} | {code} | {status} | {_md(evidence)} | {cost} | {pct} | {_md(detail)} |")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """Table-cell safe: no pipes or newlines."""
    return text.replace("|", "\\|").replace("\n", " ")


def _sorted(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.path, e.line or 0, e.code or "~", e.status))


def render_json(entries: list[Entry]) -> str:
    return json.dumps([e.to_json() for e in _sorted(entries)], indent=2) + "\n"


def _evidence_text(entry: Entry) -> str:
    parts = []
    for item in entry.evidence:
        rate = "" if item.per_step is None else f" {item.per_step:g}/step"
        parts.append(f"{item.kind} [{item.op}] x{item.count}{rate}")
    text = "; ".join(parts) or "-"
    if entry.cost_ms_per_step is not None:
        pct = "" if entry.cost_pct is None else f" ({entry.cost_pct:.1f}% of step)"
        text += f"; cost {entry.cost_ms_per_step:.3f} ms/step{pct}"
    if entry.detail:
        # Tracebacks are multi-line: the table shows their last line, JSON keeps them whole.
        text += f"  -- {entry.detail.strip().splitlines()[-1]}"
    return text


def render_text(entries: list[Entry], scripts: list[str], backend: str | None = None) -> str:
    rows = []
    for entry in _sorted(entries):
        where = f"{entry.path}:{entry.line}" if entry.line else entry.path
        code = entry.code or ("expect-sync" if entry.marker == "expect-sync" else "-")
        flag = " FAIL" if entry.failed else ""
        rows.append((where, code, entry.status + flag, _evidence_text(entry)))
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("LOCATION", "CODE", "STATUS"))]
    lines = []
    if rows:
        header = ("LOCATION", "CODE", "STATUS", "EVIDENCE")
        for row in [header, *rows]:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
        lines += ["", *legend_lines(entries), ""]
    lines.append(summary_line(entries, scripts, backend))
    return "\n".join(lines) + "\n"


def legend_lines(entries: list[Entry]) -> list[str]:
    """The LEGEND rows for the marks these entries show in the table."""
    shown = {e.status for e in entries}
    if any(e.marker == "expect-sync" for e in entries):
        shown.add("expect-sync")
    if any(e.failed for e in entries):
        shown.add("FAIL")
    if any(e.evidence for e in entries):
        shown.add("xN")
    if any(item.per_step is not None for e in entries for item in e.evidence):
        shown.add("N/step")
    if any(e.cost_ms_per_step is not None for e in entries):
        shown.add("cost")
    rows = [(mark, text) for mark, text in LEGEND if mark in shown]
    width = max((len(mark) for mark, _ in rows), default=0)
    return ["legend:"] + [f"  {mark.ljust(width)}  {text}" for mark, text in rows]


def summary_line(entries: list[Entry], scripts: list[str], backend: str | None = None) -> str:
    counts = Counter(e.status for e in entries)
    failed = sum(1 for e in entries if e.failed)
    backends = [backend] if backend else sorted({e.backend for e in entries}) or ["-"]
    parts = [f"{len(scripts)} script(s)", f"backend {'/'.join(backends)}"]
    for status in ("confirmed", "unconfirmed", "not-observable", "runtime-only", "gated", "note", *SCRIPT_STATUSES):
        if counts.get(status):
            parts.append(f"{counts[status]} {status}")
    parts.append(f"{failed} failing" if failed else "OK")
    return "verify: " + ", ".join(parts)


def render_junit(entries: list[Entry], scripts: list[str]) -> str:
    """One testsuite per script; one testcase per marker, plus one for the run itself and,
    for a script with no markers, one asserting it is clean."""
    by_script: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_script[entry.run_script].append(entry)  # a finding of an imported module is its script's
    root = ET.Element("testsuites", name="torchsync-lint verify")
    total_tests = total_failures = total_skipped = 0
    for path in sorted(set(scripts) | set(by_script)):
        suite_entries = _sorted(by_script.get(path, []))
        suite = ET.SubElement(root, "testsuite", name=path)
        cases: list[tuple[str, str | None, str | None, str]] = []  # (name, failure, skipped, body)
        script_level = [e for e in suite_entries if e.status in SCRIPT_STATUSES and e.status not in INFO_STATUSES]
        run_failure = next((e for e in script_level if e.failed), None)
        skipped = next((e for e in script_level if e.status == "skipped"), None)
        cases.append(
            (
                "run",
                f"{run_failure.status}: {run_failure.detail}" if run_failure else None,
                skipped.detail if skipped else None,
                "",
            )
        )
        markers = [e for e in suite_entries if e.marker]
        for entry in markers:
            label = entry.code or "expect-sync"
            cases.append(
                (f"line {entry.line} {label}", f"{entry.status}: {entry.detail}" if entry.failed else None, None, _evidence_text(entry))
            )
        if not markers and not script_level:
            dirty = [e for e in suite_entries if e.failed and e.status == "runtime-only"]
            failure = "; ".join(f"line {e.line}: {_evidence_text(e)}" for e in dirty) or None
            cases.append(("clean: no steady-state syncs", failure, None, ""))
        for entry in suite_entries:
            if entry.status.startswith("fixed-"):
                failure = f"{entry.status}: {entry.detail}" if entry.failed else None
                cases.append(("fixed version", failure, None, entry.detail))
        failures = skipped_count = 0
        for name, failure, skip, body in cases:
            case = ET.SubElement(suite, "testcase", classname=path, name=name)
            if failure:
                failures += 1
                failure = xml_safe(failure)
                ET.SubElement(case, "failure", message=failure[:500]).text = failure
            elif skip:
                skipped_count += 1
                ET.SubElement(case, "skipped", message=xml_safe(skip))
            if body:
                ET.SubElement(case, "system-out").text = xml_safe(body)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped_count))
        total_tests += len(cases)
        total_failures += failures
        total_skipped += skipped_count
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("skipped", str(total_skipped))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
