"""Which branches of a per-step loop run on some steps only, or once.

A step-interval gate (`if step % 100 == 0:`, `if i == 0:`) is judged by a step counter in the
test: a name that reads like one (`step`, `iteration`, `batch_idx`), or the counter of one of the
module's loops (`for j in range(n)`). A branch that fills a memo (`if key not in cache:
cache[key] = ...`) runs once per key, not once per step. A branch that a parameter's literal
default turns off (`if top_k is not None:`) runs only when a caller passes it.
"""

from __future__ import annotations

import re

import libcst as cst

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


def rebound_elsewhere(index, name: str) -> bool:
    """`global name` anywhere: a function may change the module constant."""
    return any(any(n.name.value == name for n in g.names) for g in index.nodes_of(cst.Global))
