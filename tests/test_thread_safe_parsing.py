"""CPython 3.11 keeps the depth of an ``ast`` conversion in state the whole interpreter
shares (python/cpython#106905): two threads converting at once make a correct parse fail with
``SystemError: AST constructor recursion depth mismatch``. The verifier lints two scripts on two
threads, the language server lints on a worker thread, so every ``ast`` tree the tool builds goes
through torchsync_lint.pytree, behind one lock; libcst's ``evaluated_value`` of a literal is one
such tree (it calls ``ast.literal_eval``), which `verify --jobs 2` once tripped over."""

from __future__ import annotations

import gc
import re
import sys
import threading
from pathlib import Path

import libcst as cst

from torchsync_lint.pytree import evaluated_literal, parse_tree

PACKAGE = Path(__file__).resolve().parent.parent / "torchsync_lint"


class _Garbage:
    """A cycle with a finalizer: the collector runs Python code half-way through a conversion,
    where the interpreter may hand the GIL to the other thread."""

    def __del__(self) -> None:
        sum(range(100))


def _garbage() -> None:
    a, b = _Garbage(), _Garbage()
    a.other, b.other = b, a


def test_literals_and_parses_on_two_threads_never_mix_their_depths():
    source = "\n".join(f"def f{i}(a, b=[1, (2, {{3: 4}})]):\n    return [x * {i} for x in a if x]" for i in range(300))
    literal = cst.SimpleString('"cuda:0"')
    errors: list[BaseException] = []
    stop = threading.Event()

    def literals() -> None:
        try:
            while not stop.is_set():
                _garbage()
                assert evaluated_literal(literal) == "cuda:0"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50, 10, 10)
    other = threading.Thread(target=literals)
    other.start()
    try:
        for _ in range(20):
            _garbage()
            try:
                parse_tree(source)
            except SystemError as exc:  # what libcst's own evaluated_value makes happen here
                errors.append(exc)
    finally:
        stop.set()
        other.join()
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    assert errors == []


def test_no_module_evaluates_a_literal_outside_the_lock():
    pattern = re.compile(r"\.evaluated_value\b|literal_eval|ast\.parse\(")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "pytree.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
