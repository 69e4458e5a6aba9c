"""The text report's summary line: what it counts (files actually linted, fixes by safety)."""

from __future__ import annotations

from torchsync_lint.errors import file_error
from torchsync_lint.reporters import load_formats
from torchsync_lint.rule import load_rules
from torchsync_lint.types import Applicability, Edit, FileResult, Finding, Fix

TEXT = load_formats()["text"]
RULES = load_rules()


def _finding(line: int, applicability: Applicability | None, code: str = "TSL301") -> Finding:
    fix = None if applicability is None else Fix("t", (Edit(line, 1, line, 2, "x"),), applicability)
    return Finding("t.py", line, 1, line, 2, code, RULES[code].name, "m", fix=fix)


def _summary(results, **options) -> str:
    return TEXT(results, {"quiet": False, **options}).splitlines()[-1]


def test_unsafe_fixes_are_counted_beside_the_safe_ones():
    found = [_finding(1, Applicability.SAFE), _finding(2, Applicability.UNSAFE), _finding(3, Applicability.UNSAFE), _finding(4, None)]
    summary = _summary([FileResult("t.py", found)])
    assert summary == "Found 4 findings in 1 file checked; 1 fixable with `--fix` (2 more with `--unsafe-fixes`)."


def test_no_hidden_count_when_unsafe_fixes_are_on_or_absent():
    found = [_finding(1, Applicability.SAFE), _finding(2, Applicability.UNSAFE)]
    assert _summary([FileResult("t.py", found)], unsafe_fixes=True).endswith("; 2 fixable with `--fix` --unsafe-fixes.")
    assert _summary([FileResult("t.py", found[:1])]).endswith("; 1 fixable with `--fix`.")  # near miss: nothing hidden


def test_only_unsafe_fixes_say_how_to_apply_them():
    summary = _summary([FileResult("t.py", [_finding(2, Applicability.UNSAFE)])])
    assert summary == "Found 1 finding in 1 file checked; 1 fixable with `--fix --unsafe-fixes`."


def test_a_path_that_was_not_read_is_not_a_file_checked():
    missing = FileResult("missing.py", errors=[file_error("missing.py", "TSL902", "cannot read: No such file or directory")])
    assert _summary([missing]) == "Found 0 findings in 0 files checked; 1 file could not be linted (TSL902)."
    ok = FileResult("t.py", [_finding(1, None)])
    assert _summary([missing, ok]) == "Found 1 finding in 1 file checked; 1 file could not be linted (TSL902)."


def test_a_crashed_rule_still_checked_the_file_and_errors_count_files():
    # TSL903: the other rules ran (the file was checked); two errors in one file are one file.
    crashed = FileResult("t.py", errors=[file_error("t.py", "TSL903", "rule TSL101 crashed"), file_error("t.py", "TSL903", "rule TSL102 crashed")])
    assert _summary([crashed]) == "Found 0 findings in 1 file checked; 1 file could not be linted (TSL903)."
