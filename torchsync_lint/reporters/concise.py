"""`--output-format concise`: one line per finding, `path:line:col: CODE message`, no source
snippet (ruff's `concise`), then the summary line of `text` (none with `--quiet`)."""

from __future__ import annotations

from torchsync_lint.reporters import all_findings, register


@register("concise")
def render(results, options) -> str:
    out = [f"{f.location}: {f.code} {f.message}" for f in all_findings(results)]
    if not options.get("quiet"):
        warnings = sum(1 for r in results for _ in r.findings)
        errors = sum(1 for r in results for _ in r.errors)
        files = len(results)
        summary = f"Found {warnings} finding{'s' if warnings != 1 else ''} in {files} file{'s' if files != 1 else ''} checked"
        if errors:
            summary += f"; {errors} file{'s' if errors != 1 else ''} could not be linted"
        out.append(summary + ".")
    return "".join(line + "\n" for line in out)
