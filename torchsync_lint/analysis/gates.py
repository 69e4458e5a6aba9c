"""Which branches of a per-step loop run on some steps only, or a bounded number of times.

A step-interval gate (`if step % 100 == 0:`) is judged by a step counter in the test: a name
that reads like one (`step`, `iteration`, `batch_idx`), or the counter of one of the module's
loops (`for j in range(n)`). A gated branch still runs every N-th step: what it does there is
still reported, marked gated. A bounded branch runs a fixed number of times however long the run
is (`if step == 0:`, `if batch_idx < 2:`, `if self.global_step == 0:`, a first-batch flag
`if first: ...; first = False`): it is not per-step code, and nothing in it is reported (DESIGN
3b: "a branch that runs a bounded number of times in the whole run is not per step"; a counter
that restarts each epoch bounds it per epoch, like the epoch loop's own code). A branch that fills a memo (`if key not in cache:
cache[key] = ...`) runs once per key, not once per step; so does what follows a memo's early
return (`if key in self.cache: return self.cache[key]` ... `self.cache[key] = value`). A branch that a parameter's literal
default turns off (`if top_k is not None:`) runs only when a caller passes it.
"""

from __future__ import annotations

import re

import libcst as cst

from torchsync_lint.knowledge import lightning

_COUNTER = re.compile(r"step|iter|batch|idx|^i$|^it$|^n$|count|global|^b$|^t$", re.I)
# Process identities: `if rank == 0:` / `global_rank == 0` hold on every step of one process.
_NOT_A_COUNTER = re.compile(r"rank|world|gpu|device|proc|node|master|main", re.I)


def fills_cache(stmt: cst.If) -> bool:
    """`if key not in cache: ... cache[key] = value`: a memo filled once per key (a mel basis
    per device, a window per size), not once per step."""
    test = stmt.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.NotIn)):
        return False
    key, cache = test.left, test.comparisons[0].comparator
    for line in stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ():
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    store = target.target
                    if isinstance(store, cst.Subscript) and store.value.deep_equals(cache) and len(store.slice) == 1 and isinstance(store.slice[0].slice, cst.Index) and store.slice[0].slice.value.deep_equals(key):
                        return True
    return False


def memo_hit_index(block: cst.IndentedBlock) -> int | None:
    """The position in ``block`` of a memo's early return whose cache the statements after it
    fill, or None: `if key in self.cache: return self.cache[key]` ... `self.cache[key] = v`
    (anchors per input shape and device), `if self._mask is not None: return self._mask` ...
    `self._mask = m`. What follows runs on a miss: once per key, not once per step."""
    body = block.body
    for i, stmt in enumerate(body):
        cache = _memo_return(stmt)
        if cache is not None and any(_stores(later, cache) for later in body[i + 1 :]):
            return i
    return None


def _memo_return(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """("item", C) for `if ... K in C ...: return C[K]`, ("whole", C) for `if C is not None:
    return C` / `if C: return C`, with C an attribute (a local would be new on every call)."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock) or len(stmt.body.body) != 1:
        return None
    line = stmt.body.body[0]
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Return) and line.body[0].value is not None):
        return None
    value = line.body[0].value
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index):
        cache, key = value.value, value.slice[0].slice.value
        if any(_is_membership(part, key, cache) for part in _conjuncts(stmt.test)):
            return ("item", cache)
        return None
    if isinstance(value, cst.Attribute) and any(part.deep_equals(value) or _is_not_none(part, value) for part in _conjuncts(stmt.test)):
        return ("whole", value)
    return None


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _is_membership(test: cst.BaseExpression, key: cst.BaseExpression, cache: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.In)
        and test.left.deep_equals(key)
        and test.comparisons[0].comparator.deep_equals(cache)
    )


def _is_not_none(test: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and test.left.deep_equals(value)
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    )


def _stores(stmt: cst.BaseStatement, memo: tuple[str, cst.BaseExpression]) -> bool:
    """Does ``stmt`` (at any depth) assign the memo: `C[...] = v` for an item memo, `C = v`
    for a whole one?"""
    how, cache = memo
    for node in _walk(stmt):
        if isinstance(node, cst.AssignTarget):
            target = node.target
            if how == "item" and isinstance(target, cst.Subscript) and target.value.deep_equals(cache):
                return True
            if how == "whole" and target.deep_equals(cache):
                return True
    return False


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or current is node:
            stack.extend(current.children)


def is_step_interval(test: cst.BaseExpression, tree, counters: frozenset[str] = frozenset()) -> bool:
    """A test that holds on some steps only, judged by a step counter in it.

    `step % N == 0`, `(i + 1) % log_every == 0`, `not step % 10`, `a and it % n == 0`, and
    `i == 0` / `batch_idx == last` (once per epoch). `args.rank % ngpus == 0` and
    `global_rank == 0` are no gates: they hold on every step of the process that runs them.
    ``counters``: the names the module's loops count with (`for j in range(n)`), counters
    whatever they are called.
    """
    for node in tree.walk_subtree(test):
        kind = type(node)  # exact types (analysis/tree.exact_types): asked of every `if` above a call
        if kind is cst.BinaryOperation and type(node.operator) is cst.Modulo:
            if not isinstance(node.left, (cst.SimpleString, cst.FormattedString)) and mentions_counter(node.left, tree, counters):
                return True
        elif kind is cst.Comparison and len(node.comparisons) == 1 and type(node.comparisons[0].operator) is cst.Equal:
            sides = (node.left, node.comparisons[0].comparator)
            if any(isinstance(s, (cst.Name, cst.Attribute)) and mentions_counter(s, tree, counters) for s in sides):
                return True
    return False


def is_bounded(stmt: cst.If, index, counters: frozenset[str] = frozenset()) -> bool:
    """Does the body of ``stmt`` run a bounded number of times: its test compares a step
    counter with a value for equality, or keeps it below a literal (`step == 0`, `i == last`,
    `batch_idx < 2`, `not step`), one conjunct of an `and` does, or it tests a flag the body
    itself clears (`if first: ...; first = False`) and nothing else in the loop sets again.

    ``counters`` (``step_counters``): what the code shows counts steps, whatever its name;
    a name that only reads like a counter (`optimizer_idx`) bounds nothing."""
    return _bounded_test(stmt.test, counters) or _clears_own_flag(stmt, index)


def step_counters(index, values, loop_counters: frozenset[str]) -> frozenset[str]:
    """The names (`step`, `self.iteration`: dotted) the code counts steps with: a loop's own
    counter (``loop_counters``), a name or attribute incremented by a literal (`step += 1`),
    the batch index Lightning passes its batch hooks (after the batch), and the trainers'
    own step counters (`self.global_step`, `trainer.global_step`: lightning.STEP_COUNTERS)."""
    found = set(loop_counters)
    for aug in index.nodes_of(cst.AugAssign):
        if isinstance(aug.operator, cst.AddAssign) and isinstance(aug.value, cst.Integer):
            dotted = _dotted(aug.target)
            if dotted is not None:
                found.add(dotted)
    for func in index.returns:  # a helper's parameter that every call site passes a counter
        for param in func.params.params:
            calls = index.call_sites(func)
            passed = [index.argument_for(call, func, param) for call in calls]
            if calls and all(_dotted(a) in found for a in passed if a is not None) and all(a is not None for a in passed):
                found.add(param.name.value)
    for func, info in index.class_of_method.items():
        batch_params = lightning.BATCH_HOOK_PARAMS.get(func.name.value)
        if batch_params and values.is_lightning_class(info.node):
            params = func.params.params
            position = max(batch_params) + 2  # after `self` and the batch (and outputs)
            if position < len(params):
                found.add(params[position].name.value)
    return frozenset(found)


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner is not None else None
    return None


def _bounded_test(test: cst.BaseExpression, counters: frozenset[str]) -> bool:
    kind = type(test)
    if kind is cst.BooleanOperation:
        left, right = _bounded_test(test.left, counters), _bounded_test(test.right, counters)
        return (left or right) if type(test.operator) is cst.And else (left and right)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _is_counter(test.expression, counters)  # `if not step:` is `step == 0`
    if kind is not cst.Comparison or len(test.comparisons) != 1:
        return False
    op, left, right = type(test.comparisons[0].operator), test.left, test.comparisons[0].comparator
    if op is cst.Equal:
        return any(_is_counter(s, counters) and not _is_counter(o, counters) for s, o in ((left, right), (right, left)))
    if op in (cst.LessThan, cst.LessThanEqual):
        return _is_counter(left, counters) and type(right) in _LITERALS  # `batch_idx < 2`
    if op in (cst.GreaterThan, cst.GreaterThanEqual):
        return _is_counter(right, counters) and type(left) in _LITERALS  # `2 > batch_idx`
    return False


def _is_counter(node: cst.BaseExpression, counters: frozenset[str]) -> bool:
    """A bare counter (`step`, `self.global_step`, `trainer.global_step`), not an expression of
    one: `step % 10` runs every tenth step, `step + 1` is another count."""
    dotted = _dotted(node)
    if dotted is None:
        return False
    return dotted in counters or (isinstance(node, cst.Attribute) and node.attr.value in lightning.STEP_COUNTERS)


_LITERALS = (cst.Integer,)
_FALSY = {"False": True, "None": True, "0": True, "True": False}


def _clears_own_flag(stmt: cst.If, index) -> bool:
    """`if first: ...; first = False` (or `if not self.logged: ...; self.logged = True`): the
    branch turns its own test off, and no other code of the loop (or of the function, for a
    per-step function) turns it on again."""
    test, negated = stmt.test, False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, True
    if not isinstance(test, (cst.Name, cst.Attribute)) or (isinstance(test, cst.Attribute) and not isinstance(test.value, cst.Name)):
        return False
    clears = False
    owner = next((a for a in index.ancestors(stmt) if type(a) in (cst.For, cst.While, cst.FunctionDef, cst.Lambda)), None)
    if owner is None:
        return False
    for node in index.tree.walk_subtree(owner):
        if type(node) is not cst.Assign:
            continue
        for target in node.targets:
            if target.target.deep_equals(test):
                value = node.value
                falsy = _FALSY.get(value.value) if isinstance(value, (cst.Name, cst.Integer)) else None
                if index.inside(node, stmt.body) and falsy is not None and falsy != negated:
                    clears = True
                else:
                    return False  # set elsewhere in the loop: it may run again
    return clears


def mentions_counter(node: cst.CSTNode, tree, counters: frozenset[str] = frozenset()) -> bool:
    names = [n.value for n in tree.walk_subtree(node) if type(n) is cst.Name]
    if any(_NOT_A_COUNTER.search(n) for n in names):
        return False
    return any(_COUNTER.search(n) or n in counters for n in names)


def default_test(values, test: cst.BaseExpression) -> tuple[cst.Name, bool] | None:
    """(the parameter, the test's value when it holds its literal default) for `p`,
    `not p`, `p is None`, `p is not None`: a branch the default turns on or off (``values``:
    the module's value analysis, for the parameter's definition)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = default_test(values, test.expression)
        return (inner[0], not inner[1]) if inner is not None else None
    name, op = test, None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot)):
        right = test.comparisons[0].comparator
        if not (isinstance(right, cst.Name) and right.value == "None"):
            return None
        name, op = test.left, test.comparisons[0].operator
    if not isinstance(name, cst.Name):
        return None
    defs = values.reaching_defs(name)
    if len(defs) != 1 or defs[0].how != "param":
        return None
    default = defs[0].param.default
    if not (isinstance(default, cst.Name) and default.value in ("None", "True", "False")):
        return None
    if op is None:
        return name, default.value == "True"
    is_none = default.value == "None"
    return name, is_none if isinstance(op, cst.Is) else not is_none


def none_test(test: cst.BaseExpression) -> tuple[cst.Name, bool] | None:
    """(the name, the test's value when the name is None) for `name is None` / `name is not None`."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value == "None":
            return test.left, isinstance(op, cst.Is)
    return None


def rebound_elsewhere(index, name: str) -> bool:
    """`global name` anywhere: a function may change the module constant."""
    return any(any(n.name.value == name for n in g.names) for g in index.nodes_of(cst.Global))
