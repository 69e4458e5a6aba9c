"""Rewrites: a marked statement of a step loop runs only on some steps.

- ``gate_every_n``: ``if step % 10 == 0:`` around it. Still a per-step hazard (every tenth
  step syncs), so the finding stays, and its message must say it is gated (DESIGN.md §3).
  TSL204 is the exception: it flags a ``compute()`` *not* gated by a step interval, so there
  the finding goes.
- ``gate_once``: ``if step == 0:`` around it. A branch that runs a bounded number of times
  in the whole run is not per step (DESIGN.md §3b): the finding goes.

The counter is the loop's own (``for step, batch in enumerate(loader)``, ``for step in
range(n)``); any other training loop is enumerated first (``for _gate_step, x in
enumerate(loader)``: the same iteration). Only training loops (they run `.backward()`) are
gated: ``for metric in metrics.values()`` has no step to gate on. Only statements that bind no name are gated (an
expression, ``+=``, a store into an attribute or an item, an ``if`` whose body binds none),
so the rest of the body sees the same bindings; ``while`` loops are left alone. Not
semantics-preserving by design (the gated statement runs less often): only linted.
"""

from __future__ import annotations

import libcst as cst

from .loops import Analysis, analysis_of, collect, fresh
from .rewritten import GATED, GONE, Rewritten, Source, statement


def _counter(loop: cst.For, module, stepping: bool) -> tuple[str | None, cst.For]:
    """The training loop's step counter, and the loop (enumerated when it has none); None for
    a loop that is no training loop: it has no step to gate on."""
    if not stepping:
        return None, loop  # `for metric in metrics.values()`: an index over metrics is no step
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("enumerate", "range"):
        if it.func.value == "range" and isinstance(loop.target, cst.Name):
            return loop.target.value, loop
        if it.func.value == "enumerate" and isinstance(loop.target, cst.Tuple) and isinstance(loop.target.elements[0].value, cst.Name):
            return loop.target.elements[0].value.value, loop
    name = fresh(module, "_gate_step")
    target = cst.Tuple([cst.Element(cst.Name(name)), cst.Element(loop.target)], lpar=[], rpar=[])
    return name, loop.with_changes(target=target, iter=cst.parse_expression("enumerate(__it__)").with_changes(
        args=[cst.Arg(loop.iter)]))


def _binds_no_name(node) -> bool:
    for a in collect(node, (cst.Assign, cst.AnnAssign, cst.For, cst.With, cst.NamedExpr, cst.ExceptHandler, cst.Import, cst.ImportFrom), into_scopes=False):
        if isinstance(a, cst.Assign) and all(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in a.targets):
            continue
        return False
    return not collect(node, (cst.FunctionDef, cst.ClassDef, cst.Break, cst.Continue, cst.Return, cst.Yield), into_scopes=False)


class _Gate(cst.CSTTransformer):
    def __init__(self, analysis: Analysis, condition: str, gated: list):
        self.analysis, self.condition, self.gated = analysis, condition, gated

    def _marked(self, node) -> list[int]:
        if isinstance(node, cst.If):
            lines = [self.analysis.line(node)]  # the header: `if torch.isnan(loss):  # expect: ...`
        else:
            pos = self.analysis.positions[node]
            lines = range(pos.start.line, pos.end.line + 1)
        return [line for line in lines if line in self.analysis.marker_lines]

    def visit_FunctionDef(self, node):
        return False

    def leave_SimpleStatementLine(self, original, updated):
        return self._wrap(original, updated)

    def leave_If(self, original, updated):
        return self._wrap(original, updated)

    def _wrap(self, original, updated):
        lines = self._marked(original)
        if not lines or not _binds_no_name(original):
            return updated
        self.gated += lines
        gate = statement(f"if {self.condition}:\n    pass\n")
        return gate.with_changes(body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]), leading_lines=original.leading_lines)


def _gate(src: Source, condition: str, outcome) -> Rewritten | None:
    analysis = analysis_of(src)
    replace, gated = {}, []
    for loop in analysis.step_loops():
        if not isinstance(loop, cst.For):
            continue
        name, loop2 = _counter(loop, analysis.module, id(loop) in analysis.stepping)
        if name is None:
            continue
        before = len(gated)
        body = loop.body.visit(_Gate(analysis, condition.format(step=name), gated))
        if len(gated) > before:
            replace[id(loop)] = loop2.with_changes(body=body)
    if not replace:
        return None

    class Swap(cst.CSTTransformer):
        def on_leave(self, original, updated):
            return replace.get(id(original), updated)

    module = analysis.module.visit(Swap())
    expect = {(line, code): outcome(code) for line, code in src.markers if line in set(gated)}
    return Rewritten({src.name: module.code}, expect)


def gate_every_n(src: Source) -> Rewritten | None:
    return _gate(src, "{step} % 10 == 0", lambda code: GONE if code == "TSL204" else GATED)


def gate_once(src: Source) -> Rewritten | None:
    return _gate(src, "{step} == 0", lambda code: GONE)
