"""Apply the fixes of chosen findings with the real fixer, for rule tests."""

from __future__ import annotations

from torchsync_lint.api import lint_text
from torchsync_lint.fixer import fix_source
from torchsync_lint.types import Applicability, Finding


def apply_fixes(source: str, findings: list[Finding], applicability: Applicability = Applicability.SAFE) -> str:
    """``source`` after the fixes of ``findings`` allowed at ``applicability`` (and safer).

    The first round sees exactly ``findings``; later rounds (fixes that overlapped and had to
    wait) see fresh findings of the same codes only.
    """
    codes = {f.code for f in findings}
    first = [findings]

    def lint(text: str) -> list[Finding]:
        if first:
            return first.pop()
        return [f for f in lint_text(text, "case.py") if f.code in codes]

    return fix_source(
        source,
        "case.py",
        unsafe=applicability is not Applicability.SAFE,
        suggestions=applicability is Applicability.SUGGESTION,
        lint=lint,
    ).new_source
