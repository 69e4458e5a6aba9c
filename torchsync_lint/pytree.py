"""Python's own parser (``ast``), one thread at a time.

CPython 3.11 counts the depth of the tree it is turning into ``ast`` objects in state shared by
the whole interpreter. When two threads convert trees at once (the garbage collector runs a
finalizer half-way through one conversion and the other thread gets the interpreter), the
counts mix and a correct file fails with ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905; pytest#10763 and databrickslabs/ucx#2976 saw it too). The
verifier lints two scripts at once on threads (``--jobs``), and the language server lints on a
worker thread, so every ``ast`` tree the tool builds is built here, behind one lock. Only the
conversion is guarded: reading the tree afterwards is safe. libcst's ``evaluated_value`` of a
string or number literal calls ``ast.literal_eval`` (an ``ast`` tree too), so the tool reads
literals through ``evaluated_literal`` below, never through ``evaluated_value`` itself (a test
holds the package to that).
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()  # re-entrant: a finalizer that parses on this thread must not deadlock


def parse_tree(source: str, filename: str = "<unknown>", flags: int = 0) -> ast.Module:
    """``ast.parse(source)``, with extra compiler ``flags`` (top-level await for a notebook
    cell). Raises what ``ast.parse`` raises (SyntaxError, ValueError, RecursionError...)."""
    with _LOCK:
        return compile(source, filename, "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)


def evaluated_literal(node):
    """libcst's ``node.evaluated_value`` (a string, number or concatenated string literal), built
    behind the same lock: libcst evaluates it with ``ast.literal_eval``."""
    with _LOCK:
        return node.evaluated_value
