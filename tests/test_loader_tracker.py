"""LoaderTracker._loaders_of: which loaders built in a module an expression may hold."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import ModuleAnalysis
from torchsync_lint.analysis.loaders import LoaderTracker, loaders

LEVELS, FAN_OUT = 6, 8


def _chain(with_loader: bool) -> str:
    # f0 iterates its parameter; each f<i> passes its own on FAN_OUT times: without a memo the
    # parameter's call sites are walked FAN_OUT ** LEVELS times (262,144).
    out = ["import torch", "from torch.utils.data import DataLoader", "", "def f0(x):", "    for batch in x:", "        batch.to('cuda')", ""]
    for i in range(1, LEVELS):
        out += [f"def f{i}(x):", *[f"    f{i - 1}(x)" for _ in range(FAN_OUT)], ""]
    made = "DataLoader(range(10))" if with_loader else "list(range(10))"
    out += ["def main():", f"    data = {made}", f"    f{LEVELS - 1}(data)", ""]
    return "\n".join(out)


def _loop_iter_and_tracker(source: str):
    analysis = ModuleAnalysis(cst.parse_module(source), source)
    loop = next(n for n in analysis.tree.nodes if isinstance(n, cst.For))
    return loop.iter, loaders(analysis)


def test_a_parameter_passed_on_through_many_call_sites_is_followed_once(monkeypatch):
    calls = []
    inner = LoaderTracker._loaders_of
    monkeypatch.setattr(LoaderTracker, "_loaders_of", lambda self, expr, depth=0: calls.append(1) or inner(self, expr, depth))
    expr, tracker = _loop_iter_and_tracker(_chain(with_loader=True))
    found = tracker.loaders_of(expr)
    assert {info.call for info in found} == {tracker.loaders[0].call}  # (several paths reach it)
    assert len(calls) < 500
    assert tracker.loaders_of(expr) == found  # memoised answers are copies: the caller may extend them
    found.clear()
    assert tracker.loaders_of(expr)


def test_a_module_that_builds_no_loader_holds_none():
    expr, tracker = _loop_iter_and_tracker(_chain(with_loader=False))
    assert tracker.loaders == [] and tracker.loaders_of(expr) == []
