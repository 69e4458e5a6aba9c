"""Code actions and hovers as data: which actions a finding offers, and the text each one
leaves, made by the fixer (`--fix`) and `--add-noqa`'s directive writer. No protocol here.

Every action goes through the code that validates it on the command line: the fix loop
re-parses (and re-compiles) what it produces and refuses a fix that would break the code; a
`# noqa` edit is re-parsed too. An action whose result would not parse gets no edit: it is
not listed, or, for a client that resolves edits only for the action picked, it resolves to
none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchsync_lint.types import Applicability, Finding

if TYPE_CHECKING:  # fixing.loop loads libcst: the server imports it when an action is performed
    from torchsync_lint.fixing.loop import Lint

FIX, UNSAFE_FIX, NOQA, FIX_ALL = "fix", "unsafe-fix", "noqa", "fix-all"
FIX_ALL_KIND = "source.fixAll.torchsync-lint"


@dataclass(frozen=True)
class Action:
    kind: str  # FIX, UNSAFE_FIX, NOQA or FIX_ALL
    title: str
    finding: Finding | None  # the finding it is for (None: the whole file)

    @property
    def lsp_kind(self) -> str:
        return FIX_ALL_KIND if self.kind == FIX_ALL else "quickfix"

    @property
    def preferred(self) -> bool:
        return self.kind == FIX


def offered(at: list[Finding], everything: list[Finding]) -> list[Action]:
    """The actions for the findings ``at`` a place, then "fix all" when any finding of the
    file (``everything``) has a safe fix."""
    actions: list[Action] = []
    for f in at:
        if f.severity == "error":
            continue
        fix = f.fix
        if _safe(f):
            actions.append(Action(FIX, f"Fix {f.code}: {fix.title}", f))
        elif fix is not None and fix.edits and fix.applicability is Applicability.UNSAFE:
            actions.append(Action(UNSAFE_FIX, f"Fix {f.code} (unsafe fix: may change behaviour): {fix.title}", f))
        actions.append(Action(NOQA, f"Add `# noqa: {f.code}` (silence this {f.name} finding)", f))
    if any(_safe(f) for f in everything):
        actions.append(Action(FIX_ALL, "Fix all safe torchsync-lint findings in this file", None))
    return actions


def _safe(f: Finding) -> bool:
    return f.severity != "error" and f.fix is not None and bool(f.fix.edits) and f.fix.applicability is Applicability.SAFE


def perform(action: Action, text: str, path: str, findings: list[Finding], lint: Lint) -> str | None:
    """The text after ``action``; None when it cannot be done (the fix was refused, the
    result would not parse, nothing changes)."""
    from torchsync_lint.add_noqa import add_noqa  # here: the parser loads after start-up
    from torchsync_lint.fixing.loop import fix_source, validate

    if action.kind == FIX_ALL:
        result = fix_source(text, path, unsafe=False, lint=lint, initial=findings)
        new = result.new_source
    elif action.kind in (FIX, UNSAFE_FIX):
        # One round over this finding alone: the fixer's import insertion, overlap and parse
        # checks, and nothing else of the file changed.
        result = fix_source(text, path, unsafe=action.kind == UNSAFE_FIX, lint=lambda _text: [], initial=[action.finding], max_rounds=1)
        new = result.new_source if result.applied else None
    else:
        new, added = add_noqa(text, [action.finding])
        if not added or validate(new, path, must_compile=False) is not None:
            return None
    return new if new is not None and new != text else None


def finding_key(finding: Finding) -> list:
    """What tells a finding from the others of its text, as JSON keeps it (a code action's
    data carries it to codeAction/resolve)."""
    return [finding.code, finding.line, finding.column, finding.end_line, finding.end_column, finding.cell]


def covering(findings: list[Finding], start: tuple[int, int], end: tuple[int, int]) -> list[Finding]:
    """The findings whose range meets [start, end] (1-based (line, column) pairs)."""
    out = []
    for f in findings:
        if (f.line, f.column) <= end and start <= (f.end_line, f.end_column):
            out.append(f)
    return out


def hover(findings: list[Finding]) -> str | None:
    """Markdown for the findings under the cursor: each one's message, then what
    `torchsync-lint explain CODE` prints for its rule."""
    if not findings:
        return None
    from torchsync_lint.docs import explanation
    from torchsync_lint.rule import load_rules

    rules = load_rules()
    parts = []
    for code in dict.fromkeys(f.code for f in findings):
        messages = [f.message for f in findings if f.code == code]
        rule = rules.get(code)
        head = "\n\n".join(f"**{code}** {m}" for m in messages)
        parts.append(head + ("\n\n" + _markdown(explanation(rule)) if rule is not None else ""))
    return "\n\n---\n\n".join(parts)


def _markdown(text: str) -> str:
    """`explain`'s text as hover markdown: its `#` headings one level down (a hover is no
    document), everything else as written."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())
