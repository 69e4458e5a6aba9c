"""`--format json`: a list sorted by path, line, column (DESIGN.md §4)."""

from __future__ import annotations

import json

from torchsync_lint.reporters import all_findings, register


@register("json")
def render(results, options) -> str:
    return json.dumps([f.to_dict() for f in all_findings(results)], indent=2) + "\n"
