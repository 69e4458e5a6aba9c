"""`--format junit`: JUnit XML, laid out as ruff does.

One `<testsuite>` per file with findings, one failing `<testcase>` per finding (name
`torchsync-lint.TSL101`, classname the path without `.py`, `file`/`line` attributes, the
message and `line L, col C, message` in `<failure>`; `cell N, line L, ...` in a notebook, where
`line` counts in that cell). Files we could not lint are `<error>`
test cases. A clean run is one suite `torchsync-lint` with a passing "No findings" case, so CI
dashboards show that the linter ran.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby

from torchsync_lint.reporters import all_findings, register

# Characters XML 1.0 cannot carry even escaped (C0 controls other than tab, LF, CR, ...).
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
SUITE = "torchsync-lint"


def xml_safe(text: str) -> str:
    """``text`` with the characters XML cannot carry (ANSI escapes in a traceback, say) replaced."""
    return _INVALID_XML.sub("\ufffd", text)


def _classname(path: str) -> str:
    for suffix in (".py", ".ipynb"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


@register("junit")
def render(results, options) -> str:
    items = all_findings(results)
    root = ET.Element("testsuites", name=SUITE)
    total_failures = total_errors = total_tests = 0
    for path, group in groupby(items, key=lambda f: f.path):
        group = list(group)
        suite = ET.SubElement(root, "testsuite", name=xml_safe(path))
        failures = errors = 0
        for f in group:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{SUITE}.{f.code}",
                classname=xml_safe(_classname(path)),
                file=xml_safe(path),
                line=str(f.line),
            )
            kind = "error" if f.severity == "error" else "failure"
            node = ET.SubElement(case, kind, message=xml_safe(f.message), type=f"{f.code} {f.name}")
            cell = f"cell {f.cell}, " if f.cell is not None else ""
            node.text = xml_safe(f"{cell}line {f.line}, col {f.column}, {f.message}")
            errors += kind == "error"
            failures += kind == "failure"
        suite.set("tests", str(len(group)))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        total_tests += len(group)
        total_failures += failures
        total_errors += errors
    if not items:
        suite = ET.SubElement(root, "testsuite", name=SUITE, tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No findings", classname=SUITE)
        total_tests = 1
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", str(total_errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
