"""One fix at a time: the script as `--fix --unsafe-fixes` would write it with a single fix
applied, for each fix its findings offer, so that ``--measure`` can tell what each finding
costs (the whole fix removes every hazard at once and its cost belongs to none of them).

A fix shared by several findings (two `+=` of one accumulator) is applied whole: it is one
change, and its findings are measured together. Only the script's own findings are isolated
here; a fix in a project module it imports is measured with the whole fix only. Each variant is
written like the fixer's own output (fixed_project.write_variant), into a folder the caller
removes.
"""

from __future__ import annotations

import os
import tokenize
from contextlib import closing
from dataclasses import dataclass

from torchsync_lint.verify.fixed_project import FixedVariant, ProjectFixes, write_variant
from torchsync_lint.verify.scripts import Script


@dataclass(frozen=True)
class SingleFix:
    findings: tuple[tuple[int, str], ...]  # (line, code) of the script's findings this one fix removes
    source: bytes  # the script with only that fix applied

    @property
    def label(self) -> str:
        return ", ".join(f"{code} at line {line}" for line, code in self.findings)


@dataclass(frozen=True)
class Isolation:
    fixes: list[SingleFix]
    unfixable: list[tuple[int, str]]  # findings of the script that no automatic fix removes


def isolate(path: str, config) -> Isolation:
    """Each fix of ``path``'s findings, applied alone (one round of the fixer, given only the
    findings of that fix), in the project session `--fix` uses."""
    from torchsync_lint.fixer import allowed_levels, fix_source
    from torchsync_lint.project.sessions import Sessions

    with open(path, "rb") as handle:
        raw = handle.read()
    encoding, _ = tokenize.detect_encoding(iter(raw.splitlines(keepends=True)).__next__)
    source = raw.decode(encoding)
    levels = allowed_levels(unsafe=True)
    fixes: list[SingleFix] = []
    unfixable: set[tuple[int, str]] = set()
    with closing(Sessions.for_files([path], config).session_for(path)) as session, session.editing(path) as lint:
        findings = lint(source)
        groups: dict = {}
        for finding in findings:
            fix = finding.fix
            if fix is None or fix.applicability not in levels or not fix.edits:
                unfixable.add((finding.line, finding.code))
                continue
            groups.setdefault(fix, []).append(finding)
        for group in groups.values():
            result = fix_source(source, path, config, unsafe=True, lint=lint, max_rounds=1, initial=group)
            if not result.applied or result.new_source == source:
                unfixable |= {(f.line, f.code) for f in group}  # refused: it would break the code
                continue
            removed = tuple(sorted({(f.line, f.code) for f in group}))
            fixes.append(SingleFix(removed, result.new_source.encode("utf-8" if encoding == "utf-8-sig" else encoding)))
    fixed = {key for fix in fixes for key in fix.findings}
    return Isolation(sorted(fixes, key=lambda f: f.findings), sorted(unfixable - fixed))


def write_single(fix: SingleFix, script: Script, directory: str) -> FixedVariant:
    """``fix``'s script under ``directory`` (a fresh folder per variant), runnable like the
    fixer's output: the original's directory on its ``sys.path`` for its local imports."""
    os.makedirs(directory, exist_ok=True)
    return write_variant(ProjectFixes(fix.source, True), script, directory)
