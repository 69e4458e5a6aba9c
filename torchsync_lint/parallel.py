"""Run a per-file function over many files, in worker processes when that pays.

Files are linted (and fixed) independently, so `check` and `--fix` hand each file to a
process pool. Starting workers costs more than linting a handful of files, so small runs
(a pre-commit batch of a few staged files) stay in this process. Results come back in the
order of ``files``, so reports are the same whatever the number of jobs.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# Below this many files a pool's start-up (about 0.1 s per worker to import libcst and the
# rules) costs more than it saves (benchmarks/README.md, "Parallel check").
PARALLEL_MIN_FILES = 16
JOBS_ENV = "TORCHSYNC_JOBS"
# Linting allocates millions of short-lived syntax nodes with no reference cycles: Python's
# default young-generation threshold (700 allocations) runs the cycle collector thousands of
# times per run for nothing. About 6% of a run (benchmarks/README.md). The project view keeps
# every module's analysis of a component alive until its files are linted, so a collection
# of the young finds them all alive: at 200,000 a whole-tree run collects about a seventh as
# often (a module linted alone leaves the same garbage either way; its peak memory grows by
# about 13 MB on 2 MB of scripts, benchmarks/README.md).
GC_THRESHOLD = (200_000, 20, 20)
_relaxed = 0  # how many relaxed_gc contexts are open here (a worker: relaxed for good)


def default_jobs() -> int:
    """``TORCHSYNC_JOBS`` when set to a positive integer, else one per core, at most 8."""
    value = os.environ.get(JOBS_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(os.cpu_count() or 1, 8))


def map_files(
    work: Callable[[str], T], files: Sequence[str], jobs: int | None = None, *, initializer=None, initargs: tuple = (),
    progress: Callable[[int, int], None] | None = None,
) -> list[T]:
    """``[work(f) for f in files]``, spread over ``jobs`` processes (None: default_jobs()).

    ``work`` must be picklable (a module-level function or a functools.partial of one);
    ``initializer(*initargs)`` runs once in each worker (and here, when no pool is used). Each
    file is its own task, the largest first, so that one big file does not hold back a chunk
    of small ones. If the pool cannot be started or a worker dies (no /dev/shm in a sandbox,
    the OOM killer), the files are done here instead: ``work`` is idempotent for lint and fix
    alike (fixing a file twice changes nothing the second time). ``progress(done, total)`` is
    called as files finish (progress.py draws it), in this process.
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or len(files) < PARALLEL_MIN_FILES:
        with relaxed_gc():
            return _here(work, files, initializer, initargs, progress)
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(files)), initializer=_worker_init, initargs=(initializer, initargs)) as pool:
            futures = {i: pool.submit(work, files[i]) for i in order}
            if progress is not None:
                progress(0, len(files))
                for done, _ in enumerate(as_completed(futures.values()), 1):
                    progress(done, len(files))
            return [futures[i].result() for i in range(len(files))]
    except (OSError, BrokenProcessPool):
        return _here(work, files, initializer, initargs, progress)


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """Collect cycles less often while files are linted here (restored afterwards: the library
    API must not leave the caller's process changed). What exists already is frozen, so the
    collections that do run do not rescan the imported modules."""
    global _relaxed
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    _relaxed += 1
    try:
        yield
    finally:
        _relaxed -= 1
        gc.set_threshold(*old)
        gc.unfreeze()


def keep_out_of_collections() -> None:
    """Inside a relaxed run: what exists now is frozen too, until the run ends. The project
    view keeps each module's analysis (parse, index, summarizer) until its component is
    linted; every young collection would otherwise walk all of them again, to find them
    alive (about 5% of a whole-tree run). They hold no cycles (ModuleAnalysis.release frees
    them by reference counting), so freezing them delays no memory. Outside a relaxed run,
    nothing: freezing there would be for good."""
    if _relaxed:
        gc.freeze()


def _worker_init(initializer, initargs) -> None:
    """A worker process lints and exits: its collector can stay relaxed for good."""
    global _relaxed
    _relaxed = 1
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    if initializer is not None:
        initializer(*initargs)


def _here(work, files, initializer, initargs, progress=None) -> list:
    if initializer is not None:
        initializer(*initargs)
    if progress is None:
        return [work(path) for path in files]
    results = []
    progress(0, len(files))
    for path in files:
        results.append(work(path))
        progress(len(results), len(files))
    return results


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
