"""Invariance under refactoring: each rewrite of every fixture keeps the findings it should.

Every rewrite in registry.py (extract the loop body into a helper, move helpers to another
module, a Trainer class, a base Trainer with a subclass, ``**kwargs``, a config dict, an
argparse namespace, renamed variables, import aliases, dict batches, a LightningModule, a
``step % N`` gate, a ``step == 0`` gate) is applied to every fixture under fixtures/; both
programs are linted through torchsync_lint.api and the fixture's markers are followed to
where the rewrite moved them (harness.py). What each rewrite must leave is encoded with it:
the same findings, or, for a rewrite that makes a value user-configured or a statement
run once, those findings gone (settings.py, gates.py).

tests/robustness/baseline.json holds, per rewrite, the markers held and the findings the
rewritten programs have at no marker. This test fails when a held marker is lost or an extra
finding appears (a regression), and warns when a marker is newly held or an extra finding
went away (an improvement: update the baseline).

Regenerate the baseline (after a change to the analysis, the rewrites or the fixtures), from
the repository root:

    python -m tests.robustness.report --update-baseline

and commit tests/robustness/baseline.json with the change; `python -m tests.robustness.report
--details` lists what each rewrite breaks, and the table goes in docs/precision.md
("Robustness under refactoring").
"""

from __future__ import annotations

import warnings

import pytest

from .measure import UPDATE, Summary, compare, measure, read_baseline
from .registry import REWRITES


@pytest.mark.parametrize("rewrite", REWRITES, ids=[r.name for r in REWRITES])
def test_rewrite_keeps_what_the_baseline_holds(rewrite):
    baseline = read_baseline()
    assert rewrite.name in baseline, f"no baseline for rewrite {rewrite.name!r}: run `{UPDATE}`"
    want = baseline[rewrite.name]
    lost, new_extra, gained, gone_extra = compare(want, measure(rewrite))
    if gained or gone_extra:
        warnings.warn(
            f"{rewrite.name}: improved (markers newly held: {gained}; extra findings gone: {gone_extra}); "
            f"update the baseline: `{UPDATE}`",
            stacklevel=1,
        )
    assert not lost and not new_extra, (
        f"{rewrite.name}: markers no longer held after the rewrite: {lost}; new findings at no marker: {new_extra}. "
        f"Fix the analysis, or, if the change is right, update the baseline: `{UPDATE}`"
    )


def test_the_baseline_names_only_rewrites_that_exist():
    assert set(read_baseline()) <= {r.name for r in REWRITES}


def test_a_lost_marker_or_a_new_extra_finding_is_a_regression_and_the_rest_improvements():
    want = {"preserved": ["a.py:3:TSL101", "a.py:9:TSL301"], "extra": ["a.py|TSL103|a.py|print(x)"]}
    got = Summary("r", "same findings", held={"a.py:3:TSL101", "b.py:5:TSL102"}, extra={"b.py|TSL101|b.py|x.item()"})
    lost, new_extra, gained, gone_extra = compare(want, got)
    assert lost == ["a.py:9:TSL301"] and new_extra == ["b.py|TSL101|b.py|x.item()"]
    assert gained == ["b.py:5:TSL102"] and gone_extra == ["a.py|TSL103|a.py|print(x)"]
    assert compare(want, Summary("r", "", held=set(want["preserved"]), extra=set(want["extra"]))) == ([], [], [], [])
