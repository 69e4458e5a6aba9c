"""Level 1: every rule's embedded VALID and INVALID cases (Fixit style), plus registry checks."""

from __future__ import annotations

import ast

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.fixer import fix_source
from torchsync_lint.rule import REQUIRED_SECTIONS, load_rules
from torchsync_lint.types import Applicability

RULES = load_rules()


def _cases(kind: str):
    for code, rule in RULES.items():
        for i, case in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, case, id=f"{code}-{kind.lower()}-{i}")


def _lint(rule, case):
    settings = dict(case.config)
    also = settings.pop("select", ())  # rules a case needs beside its own (TSL904 judges their codes)
    return [f for f in lint_source(case.code, "case.py", {rule.code, *also}, settings) if f.code == rule.code]


@pytest.mark.parametrize(("rule", "case"), list(_cases("VALID")))
def test_valid_case_has_no_finding(rule, case):
    ast.parse(case.code)  # a case that does not parse would pass vacuously
    assert _lint(rule, case) == []


@pytest.mark.parametrize(("rule", "case"), list(_cases("INVALID")))
def test_invalid_case_is_reported(rule, case):
    ast.parse(case.code)
    found = _lint(rule, case)
    assert found, f"{rule.code} missed:\n{case.code}"
    if case.line is not None:
        assert case.line in [f.line for f in found], f"expected line {case.line}, got {[f.line for f in found]}"
    if case.message_contains is not None:
        assert any(case.message_contains in f.message for f in found), [f.message for f in found]


_LEVELS = [Applicability.SAFE, Applicability.UNSAFE, Applicability.SUGGESTION]


def _fix_at(rule, case, level: Applicability):
    """The case's source after applying this rule's fixes at ``level`` (or safer)."""
    rank = _LEVELS.index(level)
    result = fix_source(
        case.code,
        "case.py",
        unsafe=rank >= 1,
        suggestions=rank >= 2,
        lint=lambda text: _lint(rule, type(case)(text, config=case.config)),
    )
    return result


@pytest.mark.parametrize(("rule", "case"), [p for p in _cases("INVALID") if p.values[1].expected_fix is not None])
def test_invalid_case_fix(rule, case):
    """`expected_fix` is exactly what this rule's fixes give at the case's applicability, and
    the declared applicability is the least that gives it (an UNSAFE case is not fixed by --fix)."""
    assert rule.fix_title, f"{rule.code} has an expected_fix but no fix_title"
    level = case.applicability or Applicability.SAFE
    result = _fix_at(rule, case, level)
    assert not result.refused, result.refused
    assert result.converged
    assert result.new_source == case.expected_fix
    ast.parse(result.new_source)
    assert {f.fix.applicability for f in result.applied} <= set(_LEVELS[: _LEVELS.index(level) + 1])
    if level is not Applicability.SAFE:
        weaker = _fix_at(rule, case, _LEVELS[_LEVELS.index(level) - 1])
        assert weaker.new_source != case.expected_fix, f"the fix is already applied below {level.value}"
    again = _fix_at(rule, type(case)(result.new_source, config=case.config), level)
    assert again.new_source == result.new_source, "fixing the fixed code changed it again"


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_rule_is_documented_and_tested(rule):
    doc = rule.docs()
    for section in REQUIRED_SECTIONS:
        assert section in doc
    assert len(rule.INVALID) >= 3, "at least three INVALID cases"
    assert len(rule.VALID) >= 3, "at least three VALID near-misses"
    assert rule.message and not rule.message.startswith(rule.code)
    if rule.fix_title:
        assert "## Fix safety" in doc


def test_codes_and_names_are_unique():
    assert len({r.name for r in RULES.values()}) == len(RULES)
    assert all(code == rule.code for code, rule in RULES.items())
