"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

    ::warning file=train.py,line=19,col=16,endLine=19,endColumn=27,title=TSL101 host-read-in-loop::message

Escaping follows the runner (actions/toolkit `command.ts`): in the message `%`, `\\r` and
`\\n` become `%25`, `%0D` and `%0A`; property values additionally escape `:` and `,`. Files
we could not lint are `::error` annotations. In a notebook `line` counts in the cell the title
names (`title=TSL101 host-read-in-loop (cell 3)`).
"""

from __future__ import annotations

from torchsync_lint.reporters import all_findings, register


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding) -> str:
    level = "error" if finding.severity == "error" else "warning"
    props = {"file": finding.path, "line": finding.line, "col": finding.column}
    if finding.severity != "error":
        props.update(endLine=finding.end_line, endColumn=finding.end_column)
    props["title"] = f"{finding.code} {finding.name}" + (f" (cell {finding.cell})" if finding.cell is not None else "")
    return workflow_command(level, props, finding.message)


def workflow_command(level: str, props: dict, message: str) -> str:
    """``::level key=value,...::message``, each part escaped as GitHub Actions reads it."""
    rendered = ",".join(f"{key}={escape_property(str(value))}" for key, value in props.items())
    return f"::{level} {rendered}::{escape_data(message)}"


@register("github")
def render(results, options) -> str:
    return "".join(annotation(f) + "\n" for f in all_findings(results))
