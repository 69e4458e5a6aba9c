"""Parsed modules are freed when the lint is done with them, not when the collector gets to
them: an analysis is a reference cycle holding a whole syntax tree, and one the project view
keeps for a while outlives the young collections (a whole-tree run then grew by the size of
every tree it parsed). These tests run with the collector off: whatever is freed here is freed
by reference counting."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import libcst as cst
import pytest

from torchsync_lint import parallel
from torchsync_lint.api import config_for, lint_file, lint_paths, lint_with_callers
from torchsync_lint.config import Config
from torchsync_lint.engine import lint_source
from torchsync_lint.project import session as session_module
from torchsync_lint.project.session import Session

DATA = Path(__file__).parent / "data" / "entry_points" / "helper-item" / "project"
HOT_ITEM = """\
import torch
model = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(4, 2, device="cuda")).sum()
    loss.backward()
    opt.step()
    print(loss.item())
"""


@pytest.fixture
def no_collector():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
def parsed(monkeypatch):
    """How many syntax trees libcst parses during the test."""
    count = []
    real = cst.parse_module

    def parse(source, *args, **kwargs):
        count.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", parse)
    return count


def live_trees() -> int:
    """Syntax trees alive now (libcst's nodes take no weak references: counted among the
    objects the collector tracks, which it lists even while it is off)."""
    return sum(1 for o in gc.get_objects() if type(o) is cst.Module)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(DATA, root)
    return root


def test_lint_source_frees_its_tree_without_the_collector(no_collector, parsed):
    before = live_trees()
    findings = lint_source(HOT_ITEM, "train.py")
    assert [f.code for f in findings] == ["TSL101"]
    assert len(parsed) == 1 and live_trees() == before


def test_a_whole_tree_run_frees_every_module_it_kept(tmp_path, no_collector, parsed):
    root = project(tmp_path)
    before = live_trees()
    results = lint_paths([str(root)], config_for([str(root)]), 1, use_cache=False)
    found = sorted((Path(r.path).name, f.line, f.code) for r in results for f in r.findings)
    assert ("utils.py", 5, "TSL101") in found  # through the view: train.py calls it every step
    assert len(parsed) == 2  # each module parsed once: its summary's parse is the lint's
    assert live_trees() == before


def test_linting_one_file_frees_the_modules_its_project_parsed(tmp_path, no_collector):
    root = project(tmp_path)
    utils = str(root / "utils.py")
    before = live_trees()
    result = lint_file(utils, config_for([utils]), use_cache=False)
    assert [(f.line, f.code) for f in result.findings] == [(5, "TSL101")]  # train.py parsed for its view
    own, reached = lint_with_callers(str(root / "train.py"))
    assert [(f.line, f.code, lines) for f, lines in reached] == [(5, "TSL101", [13])]
    assert live_trees() == before


def test_a_closed_session_lints_again_with_the_same_findings(tmp_path, no_collector, parsed):
    root = project(tmp_path)
    before = live_trees()
    session = Session(root, Config(), use_cache=False, files=[str(root / "utils.py"), str(root / "train.py")])
    found = [(f.line, f.code) for f in session.lint(str(root / "utils.py")).findings]
    assert live_trees() == before + 2  # both, kept: their summarizers answer the view until the run ends
    session.close()
    assert live_trees() == before
    assert [(f.line, f.code) for f in session.lint(str(root / "utils.py")).findings] == found == [(5, "TSL101")]


def test_modules_the_budget_drops_are_freed_and_linted_alike(tmp_path, monkeypatch, no_collector, parsed):
    root = project(tmp_path)
    files = [str(root / "train.py"), str(root / "utils.py")]
    expected = [[(f.line, f.code) for f in Session(root, Config(), use_cache=False, files=files).lint(p).findings] for p in files]
    before = live_trees()
    monkeypatch.setattr(session_module, "_KEEP_ANALYSES_BYTES", 1)  # keeps one summarizer, no parse for the lint
    session = Session(root, Config(), use_cache=False, files=files)
    assert [[(f.line, f.code) for f in session.lint(p).findings] for p in files] == expected
    assert live_trees() <= before + 1  # the one summarizer the budget keeps
    session.close()
    assert live_trees() == before


@pytest.mark.parametrize("budget", [900, 2000, 4500])
def test_a_budget_smaller_than_the_component_changes_no_finding(monkeypatch, budget):
    """objects_project's modules are 0.3-4.4 kB: under these budgets the summarizers drop one
    another while a module is linted, among them the one holding that module's own parse.
    The parse in use stays until its lint is done; the findings are the default budget's."""
    root = Path(__file__).parent / "data" / "objects_project"
    files = sorted(str(p) for p in root.rglob("*.py"))

    def findings() -> dict:
        session = Session(root, Config(), use_cache=False, files=files)
        return {f: [(x.line, x.code, x.message) for x in session.lint(f).findings] for f in files}

    expected = findings()
    assert sum(map(len, expected.values())) >= 18
    monkeypatch.setattr(session_module, "_KEEP_ANALYSES_BYTES", budget)
    assert findings() == expected


def test_kept_modules_are_frozen_only_inside_a_relaxed_run():
    before = gc.get_freeze_count()
    parallel.keep_out_of_collections()
    assert gc.get_freeze_count() == before  # outside a run: freezing would be for good
    with parallel.relaxed_gc():
        frozen = gc.get_freeze_count()
        kept = [[i] for i in range(1000)]  # alive while the run keeps them
        parallel.keep_out_of_collections()
        assert gc.get_freeze_count() >= frozen + len(kept)
    assert gc.get_freeze_count() == before
