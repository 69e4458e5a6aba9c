"""Which bindings of a name may reach a use of it: flow-sensitive, within one scope.

Straight-line code kills: after `loss = loss.item()`, `loss` is a host float, and a binding
inside an `if` block is killed by a later binding in the same block (`n = t; n = n.item()`
leaves the block holding a float). Bindings later in an enclosing loop reach a use through the
next iteration unless a binding inside that loop kills them first. Reads from a nested function
see every binding of the enclosing scope (the function may run at any time); reads from a
comprehension are evaluated where the comprehension stands.

Order and nesting come from the walk's preorder numbering (Tree), never from positions.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.index import COMPREHENSIONS, Def, ModuleIndex
from torchsync_lint.analysis.tree import LOOP_TYPES

_FRAMES = (cst.FunctionDef, cst.Lambda, cst.Module, *COMPREHENSIONS)
_STRAIGHT_LINE = (cst.Assign, cst.AnnAssign, cst.AugAssign)
# Exact-type sets for the hot ancestor walks: libcst's node classes are ABCs, and isinstance
# against them is several times slower than a set lookup (these classes have no subclasses).
_FRAME_TYPES = frozenset(_FRAMES)
_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)
_STRAIGHT_LINE_TYPES = frozenset(_STRAIGHT_LINE)
_DOMINATING_TYPES = frozenset({*_STRAIGHT_LINE, cst.Expr})
_BLOCK_TYPES = frozenset({cst.IndentedBlock, cst.Module})
_BRANCHING_TYPES = frozenset({cst.If, cst.Try, cst.TryStar, cst.With})
_TERMINAL_TYPES = frozenset({cst.Return, cst.Raise, cst.Continue, cst.Break})


class Bindings:
    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._memo: dict[cst.Name, list[Def]] = {}

    def reaching_defs(self, name: cst.Name) -> list[Def]:
        found = self._memo.get(name)
        if found is None:
            found = self._memo[name] = self._reaching_defs(name)
        return list(found)  # callers may extend their copy

    def _reaching_defs(self, name: cst.Name) -> list[Def]:
        index = self.index
        scope = index.scope_of(name)
        anchor: cst.CSTNode | None = name  # where the read happens in the scope that binds it
        while True:
            defs = index.defs.get(scope, {}).get(name.value, [])
            if defs:
                break
            if type(scope) is cst.Module:
                return []
            # A comprehension runs inline, where it stands; a function or lambda runs later.
            anchor = scope if anchor is not None and type(scope) in _COMPREHENSION_TYPES else None
            scope = index.scope_of(scope)
        if anchor is None:
            return list(defs)  # a global or closure read: any binding may have run before the call
        seq = index.seq(anchor)
        # A use inside the statement that binds the name (`x = f(\n    x)`, the right-hand side
        # of a multi-line assignment) reads the *previous* binding.
        own = [d for d in defs if d.how in ("assign", "unpack", "aug") and index.inside(anchor, d.stmt)]
        # A binding in the `if` branch of a statement whose `else` holds the use did not run on
        # the way there in this pass (it may still come round a loop: ``carried`` below).
        exclusive = [d for d in defs if d not in own and d.seq < seq and self._other_branch(d, anchor)]
        before = [d for d in defs if d not in own and d not in exclusive and self._binds_before(d, anchor, seq)]
        before = [d for d in before if not any(self._kills(later, d) for later in before if later.seq > d.seq)]
        loops = [a for a in self._ancestors_in_scope(anchor) if type(a) in LOOP_TYPES]
        dominating = [d for d in before if self.dominates(d, anchor)]
        killer = max(dominating, key=lambda d: d.seq) if dominating else None
        # An `if/else` or `try/except` before the use that binds the name on every path through
        # it (the restart idiom `try: x = next(it)` / `except StopIteration: it = iter(loader);
        # x = next(it)`) kills what came before it, as a plain assignment does.
        barrier = self._every_path_barrier(defs, anchor) if len(defs) > 1 else None
        if barrier is not None and killer is not None and index.seq(barrier) < killer.seq:
            barrier = None  # a plain assignment after it kills more
        cut = barrier if barrier is not None else killer.stmt if killer is not None else None
        cut_seq = index.seq(barrier) if barrier is not None else killer.seq if killer is not None else -1
        if barrier is not None:
            before = [d for d in before if d.seq > cut_seq]
        elif killer is not None:
            before = [killer] + [d for d in before if d.seq > killer.seq]
        later = [d for d in defs if d not in before and (cut is None or d.seq > cut_seq or d.seq > seq)]
        carried = [
            d for d in later if (d.seq > seq or d in own or d in exclusive) and any(index.inside(d.stmt, lp) and (cut is None or not (cut is lp or index.inside(cut, lp))) for lp in loops)
        ]
        return before + carried

    def _other_branch(self, d: Def, use: cst.CSTNode) -> bool:
        """Is ``d`` in the body of an `if` whose `else` (or `elif`) holds ``use``?"""
        for anc in self.index.ancestors(d.stmt):
            if type(anc) in _FRAME_TYPES:
                return False
            if type(anc) is cst.If and anc.orelse is not None and self.index.inside(d.stmt, anc.body) and self.index.inside(use, anc.orelse):
                return True
        return False

    def _every_path_barrier(self, defs: list[Def], anchor: cst.CSTNode) -> cst.CSTNode | None:
        """The last `if/else` or `try` statement before ``anchor``, in a block holding it, that
        runs one of ``defs`` (a plain assignment) on every path that falls through it."""
        blocks = {id(self._block_of(d.stmt)) for d in defs if type(d.stmt) in _STRAIGHT_LINE_TYPES and d.how in ("assign", "unpack")}
        if not blocks:
            return None
        node = anchor
        for anc in self.index.ancestors(anchor):
            if type(anc) in _BLOCK_TYPES:
                statements = anc.body
                position = next((i for i, s in enumerate(statements) if s is node), 0)
                for stmt in reversed(statements[:position]):
                    if type(stmt) in _BRANCHING_TYPES and self._binds_on_every_path(stmt, blocks):
                        return stmt
            if type(anc) in _FRAME_TYPES:
                return None
            node = anc
        return None

    def _binds_on_every_path(self, stmt: cst.CSTNode, blocks: set[int]) -> bool:
        kind = type(stmt)
        if kind is cst.If:
            if stmt.orelse is None or not self._block_binds(stmt.body, blocks):
                return False
            return self._binds_on_every_path(stmt.orelse, blocks) if type(stmt.orelse) is cst.If else self._block_binds(stmt.orelse.body, blocks)
        if kind in (cst.Try, cst.TryStar):
            if stmt.finalbody is not None and self._block_binds(stmt.finalbody.body, blocks):
                return True
            return self._block_binds(stmt.body, blocks) and all(self._block_binds(h.body, blocks) for h in stmt.handlers)
        if kind is cst.With:
            return self._block_binds(stmt.body, blocks)
        return False

    def _block_binds(self, block: cst.CSTNode, blocks: set[int]) -> bool:
        """Does every path that falls through ``block`` bind the name (a plain assignment at its
        top level, a statement that binds it on every path, or no path falling through: a
        `return`, `raise`, `continue` or `break`)?"""
        if id(block) in blocks:
            return True
        for stmt in getattr(block, "body", ()):
            if type(stmt) is cst.SimpleStatementLine and any(type(small) in _TERMINAL_TYPES for small in stmt.body):
                return True
            if type(stmt) in _BRANCHING_TYPES and self._binds_on_every_path(stmt, blocks):
                return True
        return False

    def _binds_before(self, d: Def, use: cst.CSTNode, seq: int) -> bool:
        """Has binding ``d`` happened before ``use`` runs, in this pass through the code?

        A loop target is bound before the loop's body and `else:` run (not before its
        iterable), a comprehension's before its element and conditions; every other binding
        before the uses that follow its statement.
        """
        if type(d.stmt) is cst.CompFor:  # (an exact type test: this runs for every def of every use)
            return not (use is d.stmt.iter or self.index.inside(use, d.stmt.iter))
        if d.seq >= seq:
            return False
        if type(d.stmt) is cst.For and d.how == "for" and self.index.inside(use, d.stmt):
            return not (use is d.stmt.iter or self.index.inside(use, d.stmt.iter))
        return not self.index.inside(use, d.stmt) or d.how in ("param", "star")

    def _kills(self, later: Def, earlier: Def) -> bool:
        """Does ``later`` (a plain assignment) run on every path from ``earlier`` onwards?

        It does when it is a statement of a block that also holds ``earlier`` (directly or
        nested): `if ddp: n = torch.tensor(n); n = n.item()` leaves `n` a float.
        """
        if type(later.stmt) not in _STRAIGHT_LINE_TYPES or later.how == "aug":
            return False
        block = self._block_of(later.stmt)
        return block is not None and self.index.inside(earlier.stmt, block)

    def _block_of(self, stmt: cst.CSTNode) -> cst.CSTNode | None:
        line = self.index.parent(stmt)  # the SimpleStatementLine
        return self.index.parent(line) if line is not None else None

    def _ancestors_in_scope(self, node: cst.CSTNode):
        for anc in self.index.ancestors(node):
            if type(anc) in _FRAME_TYPES:
                return
            yield anc

    def dominates(self, d: Def, use: cst.CSTNode) -> bool:
        """Does binding ``d`` run on every path to ``use`` (within one scope)?"""
        if d.how in ("param", "star"):
            return True
        if d.how == "for":
            if type(d.stmt) is cst.CompFor:
                return True  # binds before every part of its comprehension that reads it
            return type(d.stmt) is cst.For and self.index.inside(use, d.stmt.body)
        if type(d.stmt) not in _DOMINATING_TYPES:
            return False
        block = self._block_of(d.stmt)
        return block is not None and self.index.inside(use, block)
