"""Branches of per-step code that do not run per step: a branch that leaves the loop
(`print(x); sys.exit(1)`, `raise`, `break`), one a module-level constant or a parameter's
unpassed default turns off. Part of HotLoopAnalysis (hotloops.py), which provides ``index``,
``values`` and ``hot_loops``; bounded and gated branches are judged in gates.py."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.fixed_params import caller_fixed
from torchsync_lint.analysis.gates import default_test, none_test, rebound_elsewhere

# Statements after which the loop does not go on: the branch holding them runs once.
_EXIT_FUNCTIONS = frozenset({"sys.exit", "os._exit", "os.abort"})
_EXIT_BUILTINS = frozenset({"exit", "quit"})
_FUNCTIONS = frozenset({cst.FunctionDef, cst.Lambda})


class BranchQueries:
    def _leaves_loop(self, block: cst.IndentedBlock) -> bool:
        """Does the branch ``block`` (an `if`/`else` body) end by leaving the per-step loop:
        `raise`, `sys.exit()`, or a `break`/`return` out of a loop in the same function?"""
        owner = type(self.index.parent(block))
        if (owner is not cst.If and owner is not cst.Else) or not block.body:
            return False
        last = block.body[-1]
        if type(last) is not cst.SimpleStatementLine or not last.body:
            return False
        stmt = last.body[-1]
        if isinstance(stmt, cst.Raise):
            return True
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            func = stmt.value.func
            qn = self.values.qualname(func) or ""
            return qn in _EXIT_FUNCTIONS or (isinstance(func, cst.Name) and func.value in _EXIT_BUILTINS and not self.index.binds_locally(func.value, func))
        if isinstance(stmt, (cst.Break, cst.Return)):
            loop = next((a for a in self.index.ancestors(block) if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.Lambda))), None)
            return isinstance(loop, (cst.For, cst.While)) and loop in self.hot_loops
        return False

    def _never_taken(self, stmt: cst.If, child: cst.CSTNode) -> bool:
        """Is ``child`` (the `if` body or its `else`) a branch a module-level constant turns off
        (`capture = True` ... `if not capture:`)?"""
        value = self._constant_test(stmt.test)
        if value is None:
            return False
        if child is stmt.body:
            return not value
        return value and child is stmt.orelse

    def _constant_test(self, test: cst.BaseExpression) -> bool | None:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._constant_test(test.expression)
            return None if inner is None else not inner
        # `if classes is not None:` / `if flip:` of a parameter whose default no caller overrides
        found = default_test(self.values, test)
        if found is not None and self.values.unset_param_default(found[0]) is not None:
            return found[1]
        # `if mask is None:` of a parameter every caller fills with a tensor
        found = none_test(test)
        if found is not None and self.values.never_none(found[0]):
            return not found[1]
        if isinstance(test, cst.Attribute):
            # `if self.flag_for_pulse:` of a flag every construction fixes (`flag=False`, no
            # caller passing another): analysis/fixed_params.py; `self` has index, values, env
            fixed, value = caller_fixed(self, test)
            return value if fixed and isinstance(value, bool) else None
        if not isinstance(test, cst.Name):
            return None
        defs = self.values.reaching_defs(test)
        values = set()
        for d in defs:
            if d.how != "assign" or not isinstance(self.index.scope_of(d.stmt), cst.Module) or not isinstance(d.value, cst.Name) or d.value.value not in ("True", "False"):
                return None
            values.add(d.value.value == "True")
        if len(values) != 1 or rebound_elsewhere(self.index, test.value):
            return None
        return values.pop()

    def guarding_param(self, node: cst.CSTNode) -> tuple[cst.FunctionDef, cst.Param] | None:
        """The parameter whose default turns off the branch ``node`` is in (`if top_k is not
        None:` with `top_k=None`): ``node`` runs only if some caller passes it."""
        child = node
        for anc in self.index.ancestors(node):
            kind = type(anc)
            if kind in _FUNCTIONS:
                return None
            if kind is cst.If and (child is anc.body or child is anc.orelse):
                found = default_test(self.values, anc.test)
                if found is not None:
                    name, when_default = found
                    taken = when_default if child is anc.body else not when_default
                    defs = self.values.reaching_defs(name)
                    if not taken and len(defs) == 1 and defs[0].how == "param":
                        return defs[0].func, defs[0].param
            child = anc
        return None
