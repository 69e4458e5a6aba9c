"""The project view's memo (project/memo.py): one memo serves every module's lint of a
component, so a kept answer must be the one a fresh computation gives, whoever asked first and
at whatever depth. Checked on random recursive questions with cycles and a depth limit, in
random orders and at random depths, against a fresh memo per question."""

from __future__ import annotations

import random

import pytest

from torchsync_lint.project.memo import CycleMemo, ReadLog

LIMIT = 4


class Questions:
    """A random graph of questions: each answer joins its children's answers (asked one level
    deeper) with its own value; past LIMIT a question is cut (its answer: -1)."""

    def __init__(self, seed: int, size: int = 9) -> None:
        rng = random.Random(seed)
        self.value = [rng.randrange(5) for _ in range(size)]
        self.children = [rng.sample(range(size), rng.randrange(3)) for _ in range(size)]

    def ask(self, memo: CycleMemo, q: int, depth: int) -> int:
        return memo.solve(q, lambda: self._compute(memo, q, depth), 100, depth)

    def _compute(self, memo: CycleMemo, q: int, depth: int) -> int:
        if depth >= LIMIT and self.children[q]:
            memo.truncated()
            return -1
        found = [self.ask(memo, c, depth + 1) for c in self.children[q]]
        return self.value[q] * 1000 + sum((i + 1) * a for i, a in enumerate(found))


@pytest.mark.parametrize("seed", range(80))
def test_a_shared_memo_answers_as_a_fresh_one(seed: int) -> None:
    questions = Questions(seed, size=5 + seed % 9)
    rng = random.Random(seed)
    shared = CycleMemo(LIMIT)
    for _ in range(40):
        q, depth = rng.randrange(len(questions.value)), rng.randrange(LIMIT + 2)
        fresh = questions.ask(CycleMemo(LIMIT), q, depth)
        assert questions.ask(shared, q, depth) == fresh, (q, depth)


def test_an_answer_cut_at_the_limit_is_kept_for_its_depth_only() -> None:
    questions = Questions(0)
    questions.value, questions.children = [1, 2, 3], [[1], [2], []]  # a chain 0 -> 1 -> 2
    memo = CycleMemo(1)

    def ask(q: int, depth: int) -> int:
        return memo.solve(q, lambda: compute(q, depth), None, depth)

    def compute(q: int, depth: int) -> int:
        if depth >= 1 and questions.children[q]:
            memo.truncated()
            return -1
        return questions.value[q] + sum(ask(c, depth + 1) for c in questions.children[q])

    assert ask(0, 0) == 0  # 1 + (question 1 cut at depth 1)
    assert memo.done[0].span is None and memo.done[1][:4] == (-1, 1, None, False)
    assert ask(1, 0) == 5  # not the answer kept for depth 1: 2 + 3
    assert memo.done[1][:4] == (5, 0, 1, False)  # went one level deeper, uncut: holds at depth 0 only (the limit is 1)
    assert memo.known(1, 0) is not None and memo.known(1, 1) is None


def test_an_answer_that_leaned_on_an_open_question_is_not_kept() -> None:
    memo = CycleMemo(10)

    def ask(q: str) -> int:
        return memo.solve(q, lambda: compute(q), 0)

    def compute(q: str) -> int:
        return 1 + (ask("b") if q == "a" else ask("a"))  # a -> b -> a

    assert ask("a") == 2  # b saw a open (0): 1, a: 2
    assert memo.done["a"].cyclic and "b" not in memo.done
    # b asked first meets b open inside a: a is 1 there, not the 2 a gives asked first
    assert ask("b") == 2
    assert memo.known("a") is not None  # asked with nothing open, a's kept answer holds


class ReadingQuestions(Questions):
    """The same questions, each reading its own entry of a logged table."""

    def __init__(self, seed: int, size: int, log: ReadLog) -> None:
        super().__init__(seed, size)
        self.log = log

    def _compute(self, memo: CycleMemo, q: int, depth: int) -> int:
        self.log.read(f"entry{q}")
        return super()._compute(memo, q, depth)


@pytest.mark.parametrize("seed", range(60))
def test_a_memo_hit_reads_what_its_answer_read(seed: int) -> None:
    # what a computation read must not depend on which answers it found in the memo: the
    # view's caller table skips a call whose reads the last round did not change
    log = ReadLog()
    questions = ReadingQuestions(seed, 5 + seed % 9, log)
    rng = random.Random(seed)
    shared = CycleMemo(LIMIT, log)
    for _ in range(25):
        q, depth = rng.randrange(len(questions.value)), rng.randrange(LIMIT + 1)
        answer, reads = log.reading(lambda: questions.ask(shared, q, depth))
        fresh_answer, fresh_reads = log.reading(lambda: questions.ask(CycleMemo(LIMIT, log), q, depth))
        assert (answer, reads) == (fresh_answer, fresh_reads), (q, depth)


def test_reads_reach_every_enclosing_computation_and_nothing_is_logged_outside_one() -> None:
    log = ReadLog()
    log.read("outside")  # no computation open: nothing to record
    inner_reads = set()

    def inner():
        nonlocal inner_reads
        _, inner_reads = log.reading(lambda: log.read("b"))
        return 1

    _, outer = log.reading(lambda: (log.read("a"), inner()))
    assert inner_reads == {"b"} and outer == {"a", "b"} and not log.frames
