"""The fix loop: lint, apply the allowed non-overlapping fixes, re-parse, repeat.

Pure: text in, text out, no I/O. Every round's result is re-parsed with libcst (and
compiled when the input compiled); a round that would leave invalid code is narrowed to the
fixes that keep the code valid, and the others are refused and reported. The loop stops at a
fixed point (no applicable fix left) or after ``max_rounds`` (reported as not converged).
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from torchsync_lint.fixing.edits import (
    Candidate,
    EditError,
    LineIndex,
    Span,
    apply_spans,
    detect_newline,
    import_insertion,
    missing_imports,
    overlaps,
    resolve,
    select_non_overlapping,
)
from torchsync_lint.lines import split_lines
from torchsync_lint.types import Applicability, Finding

MAX_ROUNDS = 10
Lint = Callable[[str], list[Finding]]


@dataclass
class FixResult:
    new_source: str
    applied: list[Finding] = field(default_factory=list)  # as found in the round that fixed them
    remaining: list[Finding] = field(default_factory=list)  # findings of the final source
    initial: list[Finding] = field(default_factory=list)  # findings of the original source
    refused: list[tuple[Finding, str]] = field(default_factory=list)
    converged: bool = True
    rounds: int = 0


def allowed_levels(unsafe: bool, suggestions: bool = False) -> frozenset[Applicability]:
    levels = {Applicability.SAFE}
    if unsafe:
        levels.add(Applicability.UNSAFE)
    if suggestions:
        levels.add(Applicability.SUGGESTION)
    return frozenset(levels)


def fix_source(
    source: str,
    path: str,
    config=None,
    unsafe: bool = False,
    *,
    suggestions: bool = False,
    lint: Lint | None = None,
    max_rounds: int = MAX_ROUNDS,
    initial: list[Finding] | None = None,
) -> FixResult:
    """Apply every fix allowed at this safety level to a fixed point.

    ``lint`` (text -> findings) defaults to linting ``source`` as one module at ``path`` on
    its own; the fix command passes its project session's (Session.editing), tests and the
    embedded rule cases their own. ``initial``: the findings ``lint`` gives for ``source``,
    when the caller already has them.
    """
    if lint is None:
        from torchsync_lint.api import linter_for

        lint = linter_for(path, config)

    levels = allowed_levels(unsafe, suggestions)
    result = FixResult(source)
    newline = detect_newline(source)
    compiles = _LazyCompiles(source, path)  # only fixed files pay for a compile()
    refused_keys: set[tuple] = set()
    seen = {_digest(source)}
    text = source
    findings = lint(text) if initial is None else initial
    result.initial = findings
    for _ in range(max_rounds):
        candidates = _candidates(findings, levels, text, newline, refused_keys, result)
        if not candidates:
            break
        result.rounds += 1
        chosen, _waiting = select_non_overlapping(candidates)
        new_text = _apply_round(text, path, chosen, newline, compiles, refused_keys, result)
        if new_text is None:
            continue  # everything this round was refused; the others are retried
        text = new_text
        digest = _digest(text)
        findings = lint(text)
        if digest in seen:  # fixes that undo each other: stop rather than cycle
            result.converged = False
            break
        seen.add(digest)
    else:
        leftover = _candidates(findings, levels, text, newline, refused_keys, FixResult(text))
        result.converged = not leftover
    result.new_source = text
    result.remaining = findings
    return result


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _key(finding: Finding, text: str, spans: list[Span]) -> tuple:
    """Identifies a fix across rounds although positions shift: the text it replaces and the
    replacement, plus the text of the line it starts on."""
    lines = split_lines(text)
    line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
    return (finding.code, line.strip(), tuple((text[s.start : s.end], s.content) for s in spans))


def _candidates(findings, levels, text, newline, refused_keys, result) -> list[Candidate]:
    if not any(f.fix is not None and f.fix.applicability in levels for f in findings):
        return []
    index = LineIndex(text)
    by_fix: dict = {}
    for finding in findings:
        fix = finding.fix
        if fix is None or fix.applicability not in levels or not fix.edits:
            continue
        try:
            spans = resolve(fix, index, newline)
        except EditError as exc:
            key = (finding.code, finding.line, finding.column, str(exc))
            if key not in refused_keys:
                refused_keys.add(key)
                result.refused.append((finding, f"invalid edit: {exc}"))
            continue
        if _key(finding, text, spans) in refused_keys:
            continue
        if fix in by_fix:  # several findings share one fix (e.g. two `+=` of one accumulator)
            by_fix[fix].findings.append(finding)
        else:
            by_fix[fix] = Candidate(fix, [finding], spans)
    return list(by_fix.values())


def _apply_round(text, path, chosen, newline, compiles, refused_keys, result) -> str | None:
    """Apply ``chosen`` together; if that is invalid, keep the largest valid prefix of them
    one fix at a time and refuse the fixes that break the code."""
    new_text, problem = _try(text, path, chosen, newline, compiles)
    if problem is None:
        _accept(chosen, result)
        return new_text
    accepted: list[Candidate] = []
    for cand in chosen:
        trial, problem = _try(text, path, [*accepted, cand], newline, compiles)
        if problem is None:
            accepted.append(cand)
            new_text = trial
        else:
            for finding in cand.findings:
                result.refused.append((finding, problem))
            refused_keys.add(_key(cand.findings[0], text, cand.spans))
    if not accepted:
        return None
    _accept(accepted, result)
    return new_text


def _accept(cands: list[Candidate], result: FixResult) -> None:
    for cand in cands:
        result.applied.extend(cand.findings)


def _try(text, path, cands, newline, compiles) -> tuple[str, str | None]:
    """The text with ``cands`` applied (plus their imports), and why it is invalid (or None)."""
    spans = [s for c in cands for s in c.spans]
    wanted = [imp for c in cands for imp in c.fix.imports]
    if wanted:
        try:
            module = cst.parse_module(text)
            add, clashes = missing_imports(module, wanted)
            if clashes:
                return text, f"needs `import {clashes[0]}` but the module binds that name otherwise"
            if add:
                first = min(s.start for c in cands if c.fix.imports for s in c.spans)
                at = import_insertion(module, text, first, add, newline)
                if any(overlaps(at, s) for s in spans):
                    return text, "cannot add imports: a fix rewrites the place they go"
                spans.insert(0, at)  # at a shared offset the import lands before a fix's insertion
        except (cst.ParserSyntaxError, EditError) as exc:
            return text, f"cannot add imports: {exc}"
    new_text = apply_spans(text, spans)
    return new_text, validate(new_text, path, compiles)


def validate(text: str, path: str, must_compile: bool) -> str | None:
    """None when ``text`` parses with libcst (and compiles, when the original did)."""
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return f"the fixed code would not parse: {exc.message} (line {exc.raw_line})"
    except (RecursionError, MemoryError) as exc:
        return f"the fixed code could not be parsed: {type(exc).__name__}"
    if must_compile:
        problem = _compile_problem(text, path)
        if problem is not None:
            return f"the fixed code would not compile: {problem}"
    return None


class _LazyCompiles:
    """Whether the original compiles, computed on first use (a file with no fix never asks)."""

    def __init__(self, text: str, path: str) -> None:
        self.text, self.path, self.value = text, path, None

    def __bool__(self) -> bool:
        if self.value is None:
            self.value = _compile_problem(self.text, self.path) is None
        return self.value


def _compile_problem(text: str, path: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes is not our business
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        line = getattr(exc, "lineno", None)
        return f"{getattr(exc, 'msg', exc)}" + (f" (line {line})" if line else "")
    except (RecursionError, MemoryError) as exc:
        return type(exc).__name__
    return None
