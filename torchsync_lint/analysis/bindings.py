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
        before = [d for d in defs if d not in own and self._binds_before(d, anchor, seq)]
        before = [d for d in before if not any(self._kills(later, d) for later in before if later.seq > d.seq)]
        loops = [a for a in self._ancestors_in_scope(anchor) if type(a) in LOOP_TYPES]
        dominating = [d for d in before if self.dominates(d, anchor)]
        killer = max(dominating, key=lambda d: d.seq) if dominating else None
        if killer is not None:
            before = [killer] + [d for d in before if d.seq > killer.seq]
        later = [d for d in defs if d not in before and (killer is None or d.seq > killer.seq or d.seq > seq)]
        carried = [
            d for d in later if (d.seq > seq or d in own) and any(index.inside(d.stmt, lp) and (killer is None or not (killer.stmt is lp or index.inside(killer.stmt, lp))) for lp in loops)
        ]
        return before + carried

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
