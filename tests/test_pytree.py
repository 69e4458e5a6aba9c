"""pytree.parse_tree: Python's own parser, one thread at a time (CPython 3.11 shares the AST
constructor's depth count between threads; the verifier and the language server lint on
threads). See torchsync_lint/pytree.py."""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

import pytest

from torchsync_lint.pytree import parse_tree

SOURCE = (Path(__file__).resolve().parent.parent / "torchsync_lint" / "analysis" / "positions.py").read_text()


def test_parse_tree_is_ast_parse():
    assert ast.dump(parse_tree(SOURCE)) == ast.dump(ast.parse(SOURCE))
    with pytest.raises(SyntaxError):
        parse_tree("def f(:\n")
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    assert isinstance(parse_tree("await g()\n", "cell", flags).body[0], ast.Expr)  # a notebook cell


class _Cycle:
    """Garbage that only the collector frees, whose finalizer hands the interpreter to the
    other thread: what interleaves two conversions in a real run."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def _parse_on_two_threads(parse) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(150):
            try:
                parse(SOURCE)
            except SystemError as exc:
                errors.append(str(exc))
                return
            for _ in range(20):
                _Cycle()

    threshold = gc.get_threshold()
    gc.set_threshold(100)
    try:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*threshold)
    return errors


def test_two_threads_parsing_at_once_do_not_mix_their_depth_counts():
    if not _parse_on_two_threads(ast.parse):
        pytest.skip("this interpreter's ast.parse did not fail on two threads (its bug is fixed, or the threads never interleaved)")
    assert _parse_on_two_threads(parse_tree) == []
