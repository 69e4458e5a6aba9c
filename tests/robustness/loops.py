"""Where the rewrites cut a program: its step loops, and the names a piece of a loop body
reads from and hands back to its function.

The rewrites that move code (into a helper, a Trainer, a LightningModule) all need the same
facts about the statements they move (a *run*: consecutive statements of a loop body with no
`break`/`continue`/`return`/`yield` of their own): which local names it reads that were bound
before it (its inputs), which names it binds that the rest of the function reads (its outputs),
and which inputs the loop never rebinds (loop invariants: what a Trainer stores on `self`).
The facts come from libcst's scope analysis, so a name bound in a comprehension or a lambda is
not taken for a local of the function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def wrap(source: str) -> MetadataWrapper:
    return MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)


class _Collect(cst.CSTVisitor):
    def __init__(self, types=None, into_scopes: bool = True):
        self.nodes: list[cst.CSTNode] = []
        self.types = types
        self.into_scopes = into_scopes

    def on_visit(self, node):
        if self.types is None or isinstance(node, self.types):
            self.nodes.append(node)
        return self.into_scopes or not isinstance(node, SCOPES)


def collect(nodes, types=None, into_scopes: bool = True) -> list[cst.CSTNode]:
    visitor = _Collect(types, into_scopes)
    for node in nodes if isinstance(nodes, (list, tuple)) else [nodes]:
        node.visit(visitor)
    return visitor.nodes


def _own_control(stmt: cst.CSTNode) -> bool:
    """Does ``stmt`` leave the loop it sits in, or the function (a `break`/`continue` of this
    loop; a `return`, `yield`, `await` anywhere outside a nested function)?"""

    class V(cst.CSTVisitor):
        found = False
        depth = 0

        def on_visit(self, node):
            if isinstance(node, SCOPES):
                return False
            if isinstance(node, (cst.Return, cst.Yield, cst.Await, cst.Global, cst.Nonlocal, cst.Del)):
                self.found = True
            if isinstance(node, (cst.Break, cst.Continue)) and self.depth == 0:
                self.found = True
            if isinstance(node, LOOPS):
                self.depth += 1
            return True

        def on_leave(self, node):
            if isinstance(node, LOOPS):
                self.depth -= 1

    v = V()
    stmt.visit(v)
    return v.found or isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


def _mentions_super(nodes) -> bool:
    return any(isinstance(n, cst.Name) and n.value in ("super", "locals", "vars") for n in collect(nodes, cst.Name))


@dataclass
class Run:
    """Statements ``loop.body.body[start:stop]`` of one loop, and their names (sorted)."""

    loop: cst.For | cst.While
    func: cst.FunctionDef | None  # None: a loop at module level
    top: cst.CSTNode  # the module-level statement holding the loop (helpers go before it)
    start: int
    stop: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)  # inputs the loop never rebinds
    iter_invariants: list[str] = field(default_factory=list)  # locals read by the loop's header, never rebound in the loop
    loop_outputs: list[str] = field(default_factory=list)  # names bound in the loop that code after it reads
    loop_inputs: list[str] = field(default_factory=list)  # names the loop reads, bound outside it, that it rebinds
    loop_invariants: list[str] = field(default_factory=list)  # names the loop reads, bound outside it, never rebound in it
    target_names: list[str] = field(default_factory=list)

    @property
    def statements(self) -> list[cst.BaseStatement]:
        return list(self.loop.body.body[self.start:self.stop])


class Analysis:
    """One module's scopes, parents and positions, and its step loops."""

    def __init__(self, source: str, marker_lines: set[int] = frozenset()):
        self.wrapper = wrap(source)
        self.module = self.wrapper.module
        self.scopes = self.wrapper.resolve(ScopeProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.marker_lines = set(marker_lines)

    def line(self, node) -> int:
        return self.positions[node].start.line

    def _lines(self, node) -> range:
        pos = self.positions[node]
        return range(pos.start.line, pos.end.line + 1)

    def _has_marker(self, node) -> bool:
        return any(line in self.marker_lines for line in self._lines(node))

    def enclosing(self, node, types):
        node = self.parents.get(node)
        while node is not None and not isinstance(node, types):
            node = self.parents.get(node)
        return node

    def top_of(self, node) -> cst.CSTNode:
        while not isinstance(self.parents.get(node), cst.Module):
            node = self.parents[node]
        return node

    def step_loops(self) -> list[cst.For | cst.While]:
        """The loops a rewrite restructures: the innermost loops that run `.backward()`, or call
        a function of the module that does (the training steps), else the innermost loops
        holding a marked line (evaluation steps)."""

        def calls_backward(node):
            return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward" for c in collect(node, cst.Call, into_scopes=False))

        # a module-level function that runs backward: a loop calling it steps too (`train_step(...)`)
        steppers = {s.name.value for s in self.module.body if isinstance(s, cst.FunctionDef) and calls_backward(s.body)}

        def backward(loop):
            calls = collect(loop.body, cst.Call, into_scopes=False)
            return calls_backward(loop.body) or any(isinstance(c.func, cst.Name) and c.func.value in steppers for c in calls)

        loops = collect(self.module, LOOPS)
        stepping = [lp for lp in loops if backward(lp)]
        marked = [lp for lp in loops if self._has_marker(lp.body) and not backward(lp)]
        marked = [lp for lp in marked if not any(self._inside(lp, s) or self._inside(s, lp) for s in stepping)]
        self.stepping = {id(lp) for lp in stepping}
        chosen = stepping + marked
        innermost = [lp for lp in chosen if not any(o is not lp and self._inside(o, lp) for o in chosen)]
        return sorted(innermost, key=self.line)

    def _inside(self, inner, outer) -> bool:
        node = self.parents.get(inner)
        while node is not None:
            if node is outer:
                return True
            node = self.parents.get(node)
        return False

    def run(self, loop, whole_body: bool = False) -> Run | None:
        """The longest run of statements of ``loop``'s body that can move out of it (None when
        none can, or the function defeats the analysis: `global`, `del`, `super()`)."""
        if loop.orelse is not None or not isinstance(loop.body, cst.IndentedBlock):
            return None
        body = list(loop.body.body)
        movable = [not _own_control(s) for s in body]
        best, i = (0, 0), 0
        while i < len(body):
            if movable[i]:
                j = i
                while j < len(body) and movable[j]:
                    j += 1
                if j - i > best[1] - best[0]:
                    best = (i, j)
                i = j
            else:
                i += 1
        if best == (0, 0) and not whole_body:
            return None
        if whole_body:
            best = (0, len(body))
        func = self.enclosing(loop, (cst.FunctionDef,))
        if _mentions_super(body[best[0]:best[1]]):
            return None
        run = Run(loop, func, self.top_of(loop), best[0], best[1])
        return run if self._names(run) else None

    def _names(self, run: Run) -> bool:
        scope = self.scopes[run.loop]
        index = {id(n): i for i, stmt in enumerate(run.statements) for n in collect(stmt)}
        run_nodes = set(index)
        loop_nodes = {id(n) for n in collect(run.loop)}
        header = collect([run.loop.iter] if isinstance(run.loop, cst.For) else [run.loop.test])
        header_ids = {id(n) for n in header}
        target_ids = {id(n) for n in collect(run.loop.target)} if isinstance(run.loop, cst.For) else set()
        aug_targets = {id(a.target) for a in collect(run.loop, cst.AugAssign)}
        # a plain `name = value` at the run's top level defines the name before any later read;
        # the reads in `value` come first (`x = x.to(device)` reads the x bound before)
        plain_targets, plain_values = set(), set()
        for stmt in run.statements:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
                plain_targets |= {id(n) for t in stmt.body[0].targets for n in collect(t.target, cst.Name)}
                plain_values |= {id(n) for n in collect(stmt.body[0].value)}
        names: dict[str, dict] = {}
        for assignment in scope.assignments:
            entry = names.setdefault(assignment.name, {"stores": [], "reads": []})
            node = assignment.node
            entry["stores"].append(node)
            if id(node) in aug_targets:
                entry["reads"].append(node)
            entry["reads"].extend(r.node for r in assignment.references)
        if any(isinstance(a.node, (cst.Global, cst.Nonlocal)) for a in scope.assignments):
            return False
        for name, entry in sorted(names.items()):
            stores_in_run = [n for n in entry["stores"] if id(n) in run_nodes]
            stores_out = [n for n in entry["stores"] if id(n) not in run_nodes]
            reads_in_run = [n for n in entry["reads"] if id(n) in run_nodes]
            reads_out = [n for n in entry["reads"] if id(n) not in run_nodes]
            stores_in_loop = [n for n in entry["stores"] if id(n) in loop_nodes]
            if isinstance(scope, cst.metadata.GlobalScope) and not stores_in_loop:
                continue  # a module-level name the run reads: visible from a helper as it is
            first = min(stores_in_run, key=lambda n: index[id(n)]) if stores_in_run else None
            first_store_plain = first is not None and id(first) in plain_targets
            if reads_in_run and stores_out:
                at = index[id(first)] if first is not None else len(run.statements)
                read_first = not first_store_plain or any(
                    index[id(n)] < at or (index[id(n)] == at and id(n) in plain_values) for n in reads_in_run
                )
                if read_first:
                    run.inputs.append(name)
                    if not stores_in_loop:
                        run.invariants.append(name)
            is_target = any(id(n) in target_ids for n in entry["stores"])
            if stores_in_run and (reads_out or (name in run.inputs and not is_target)):
                if name not in run.inputs and not first_store_plain:
                    return False  # bound only on some paths of the run: the helper could not return it
                run.outputs.append(name)
            if any(id(n) in header_ids for n in entry["reads"]) and not stores_in_loop and stores_out:
                run.iter_invariants.append(name)
            if any(id(n) in target_ids for n in entry["stores"]):
                run.target_names.append(name)
            reads_after = [n for n in entry["reads"] if id(n) not in loop_nodes]
            if stores_in_loop and reads_after:
                run.loop_outputs.append(name)
            reads_in_loop = [n for n in entry["reads"] if id(n) in loop_nodes]
            if stores_in_loop and reads_in_loop and any(id(n) not in loop_nodes for n in entry["stores"]):
                run.loop_inputs.append(name)
            if reads_in_loop and not stores_in_loop and stores_out:
                run.loop_invariants.append(name)
        return True



@lru_cache(maxsize=8)
def _analysis(text: str, marker_lines: frozenset) -> Analysis:
    return Analysis(text, marker_lines)


def analysis_of(src) -> Analysis:
    """The Analysis of a rewrite's Source, made once: resolving libcst's metadata is most of
    what a rewrite costs, and the trees are immutable, so the rewrites of one fixture share it."""
    return _analysis(src.text, frozenset(src.marker_lines))


def fresh(module: cst.Module, base: str) -> str:
    """``base``, or ``base_2``, ... : a name the module does not use."""
    used = {n.value for n in collect(module, cst.Name)}
    name, k = base, 2
    while name in used:
        name, k = f"{base}_{k}", k + 1
    return name


def attr_for(name: str, suffix: str = "") -> str:
    """The attribute a class stores local ``name`` in (``self`` of an enclosing method: ``owner``;
    ``suffix`` keeps clear of a base class's own attributes: LightningModule.device)."""
    return ("owner" if name == "self" else name) + suffix


def rename_reads(node, names, obj="self", suffix=""):
    """``node`` with reads of ``names`` as attributes of ``obj``: the values a class stores on
    itself. Attribute names, keywords and parameters are not reads."""
    return node.visit(_AttrRenamer(set(names), obj, suffix))


class _AttrRenamer(cst.CSTTransformer):
    def __init__(self, names, obj, suffix):
        self.names, self.obj, self.suffix = names, obj, suffix

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)  # `x.model`: the attribute keeps its name

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def visit_Param(self, node):
        return False

    def leave_Name(self, original, updated):
        if original.value in self.names:
            return cst.Attribute(value=cst.Name(self.obj), attr=cst.Name(attr_for(original.value, self.suffix)))
        return updated
