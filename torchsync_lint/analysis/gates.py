"""Which branches of a per-step loop run on some steps only, or once.

A step-interval gate (`if step % 100 == 0:`, `if i == 0:`) is judged by a step counter in the
test: a name that reads like one (`step`, `iteration`, `batch_idx`), or the counter of one of the
module's loops (`for j in range(n)`). A branch that fills a memo (`if key not in cache:
cache[key] = ...`) runs once per key, not once per step.
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
