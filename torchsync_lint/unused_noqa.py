"""TSL904: suppression codes that silenced nothing, as ruff's RUF100, and the fix that drops them.

Which entries are judged (rules/suppressions.py documents the rule for users):

* Only TSL codes and prefixes of a directive that names codes. A blanket `# noqa` may serve
  other tools; `E501` is flake8's or ruff's business, and their own checks keep it.
* Only when every rule the entry names ran on this file: a code that is deselected, ignored
  (per-file ignores included), crashed (TSL903) or inert in this run (TSL203 without a known
  torchmetrics version) may be used under another selection or environment, so it is not
  judged. A code that names no rule at all (`TSL199`, `TSL902`) is reported: it never
  suppresses anything.
* An entry is used when it suppressed a finding of a rule that ran. TSL904's own code is never
  judged (it silences the finding about its own comment).

One finding per comment: its one edit rewrites the whole comment, so two unused codes of one
comment never give overlapping edits. Other tools' codes stay; a directive left with no codes
goes (a `# noqa:` with none would turn into a blanket `# noqa`), and a comment left empty goes
with the blanks before it, or with its line when it stood alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchsync_lint.suppress import Directive, matches
from torchsync_lint.types import Applicability, Edit, Finding, Fix

CODE = "TSL904"
NAME = "unused-suppression"
_CODES_IN = re.compile(r"(?P<head>#\s*noqa:\s*|#\s*torchsync:\s*ignore\[)(?P<codes>[^\]]*?)(?P<tail>\]?)$", re.I)


def judged(entry: str, ran: set[str], known: Iterable[str]) -> str | None:
    """How ``entry`` is judged: "rule" (every rule it names ran), "unknown" (it names none),
    or None (not ours, TSL904 itself, or a rule it names did not run)."""
    if not entry.startswith("TSL") or CODE.startswith(entry):
        return None  # other tools' codes; TSL904 (and TSL9, TSL: they cover it) silence this rule
    covered = {code for code in known if code.startswith(entry)}
    if not covered:
        return "unknown"
    return "rule" if covered <= ran else None


def unused_findings(
    path: str, found: list[Directive], used: set[tuple[Directive, str]], ran: set[str], known: Iterable[str],
    exempt: set[str],
) -> list[Finding]:
    """TSL904 for every comment with judged entries that silenced nothing (``used``: the
    (directive, entry) pairs that suppressed a finding; ``exempt``: file-level codes)."""
    if matches(CODE, exempt):
        return []
    known = tuple(known)
    by_comment: dict[tuple[int, int], list[Directive]] = {}
    for d in found:
        by_comment.setdefault((d.line, d.comment_start), []).append(d)
    findings = []
    for (line, _), group in sorted(by_comment.items()):
        if any(d.matching(CODE) for d in found if d.line == line):
            continue  # `# noqa: TSL904` (or a blanket one) on the line keeps this comment as it is
        drops: dict[Directive, set[str]] = {}
        unknown: list[str] = []
        for d in group:
            for entry in d.codes or ():
                verdict = judged(entry, ran, known)
                if verdict is not None and (d, entry) not in used:
                    drops.setdefault(d, set()).add(entry)
                    if verdict == "unknown":
                        unknown.append(entry)
        if drops:
            findings.append(_finding(path, group, drops, unknown))
    return findings


def _finding(path: str, group: list[Directive], drops: dict[Directive, set[str]], unknown: list[str]) -> Finding:
    first = next(d for d in group if d in drops)
    names = sorted({c for codes in drops.values() for c in codes})
    listed = ", ".join(f"`{c}`" for c in names)
    message = f"unused suppression: {listed} silence{'s' if len(names) == 1 else ''} nothing here"
    if unknown:
        message += f" ({', '.join(f'`{c}`' for c in sorted(set(unknown)))} names no rule)"
    title = f"Remove unused {', '.join(names)}"
    return Finding(
        path, first.line, first.start + 1, first.line, first.end + 1, CODE, NAME, message,
        fix=Fix(title, (_edit(first, drops),), Applicability.SAFE),
    )


def _edit(d: Directive, drops: dict[Directive, set[str]]) -> Edit:
    """The edit that rewrites the comment holding ``d`` without the dropped entries."""
    comment = d.comment
    for other in sorted(drops, key=lambda o: o.start, reverse=True):  # right to left: offsets hold
        lo, hi = other.start - other.comment_start, other.end - other.comment_start
        comment = comment[:lo] + _without(comment[lo:hi], drops[other]) + comment[hi:]
    comment = _tidy(comment)
    end = d.comment_start + len(d.comment) + 1
    if comment:
        return Edit(d.line, d.comment_start + 1, d.line, end, comment)
    if d.own_line:
        return Edit(d.line, 1, d.line + 1, 1, "")  # the whole line (the fixer clamps past the end)
    code = _code_before(d)
    return Edit(d.line, len(code) + 1, d.line, end, "")


def _without(directive: str, drop: set[str]) -> str:
    """One directive's text without the ``drop`` entries; "" when none is left."""
    m = _CODES_IN.match(directive)
    if m is None:
        return directive
    kept = [c for c in re.split(r"[\s,]+", m.group("codes").strip()) if c and c.upper() not in drop]
    return m.group("head") + ", ".join(kept) + m.group("tail") if kept else ""


def _tidy(comment: str) -> str:
    """A comment after removals: "" when only `#` and blanks are left, one leading `#`."""
    text = comment.strip()
    if not text.strip("#").strip():
        return ""
    if not text.startswith("#"):
        text = "# " + text  # `# noqa: TSL101 slow on purpose` keeps `# slow on purpose`
    return re.sub(r"\s+$", "", text)


def _code_before(d: Directive) -> str:
    """The line's text before the comment, without the blanks that separated them."""
    return d.line_text[: d.comment_start].rstrip() if d.line_text else ""
