"""The findings on the lines a test marks: `# flag` (must be found) and `# clean` (must not),
as sorted (code, "flag" | "clean") pairs; findings on unmarked lines are not the test's."""

from __future__ import annotations

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config


def marked_findings(source: str, path: str = "train.py") -> list[tuple[str, str]]:
    lines = source.splitlines()
    found = []
    for f in lint_text(source, path, Config()):
        text = lines[f.line - 1]
        if "# flag" in text or "# clean" in text:
            found.append((f.code, "flag" if "# flag" in text else "clean"))
    return sorted(found)
