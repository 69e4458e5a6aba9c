"""`--statistics`: how many findings of each rule, instead of the findings (as ruff).

Text is one row per code, most frequent first: `count  code  name`; JSON is a list of
`{"code", "name", "count", "fixable"}` (`fixable`: how many of them `--fix` would fix with the
current unsafe-fixes setting). Files that could not be linted count under their TSL90x code.
"""

from __future__ import annotations

import json
from collections import Counter

from torchsync_lint.reporters import all_findings
from torchsync_lint.types import Applicability


def _fixable(finding, unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE))


def render_statistics(results, fmt: str, options: dict) -> str:
    unsafe = bool(options.get("unsafe_fixes"))
    items = all_findings(results)
    counts = Counter((f.code, f.name) for f in items)
    fixable = Counter((f.code, f.name) for f in items if _fixable(f, unsafe))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt == "json":
        data = [{"code": code, "name": name, "count": n, "fixable": fixable[(code, name)]} for (code, name), n in rows]
        return json.dumps(data, indent=2) + "\n"
    return "".join(f"{n:5d}  {code}  {name}\n" for (code, name), n in rows)
