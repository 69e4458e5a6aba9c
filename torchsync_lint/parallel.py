"""Run a per-file function over many files, in worker processes when that pays.

Files are linted (and fixed) independently, so `check` and `--fix` hand each file to a
process pool. Starting workers costs more than linting a handful of files, so small runs
(a pre-commit batch of a few staged files) stay in this process. Results come back in the
order of ``files``, so reports are the same whatever the number of jobs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# Below this many files a pool's start-up (about 0.1 s per worker to import libcst and the
# rules) costs more than it saves (benchmarks/README.md, "Parallel check").
PARALLEL_MIN_FILES = 16
JOBS_ENV = "TORCHSYNC_JOBS"


def default_jobs() -> int:
    """``TORCHSYNC_JOBS`` when set to a positive integer, else one per core, at most 8."""
    value = os.environ.get(JOBS_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(os.cpu_count() or 1, 8))


def map_files(work: Callable[[str], T], files: Sequence[str], jobs: int | None = None) -> list[T]:
    """``[work(f) for f in files]``, spread over ``jobs`` processes (None: default_jobs()).

    ``work`` must be picklable (a module-level function or a functools.partial of one). If
    the pool cannot be started or a worker dies (no /dev/shm in a sandbox, the OOM killer),
    the files are done here instead: ``work`` is idempotent for lint and fix alike (fixing
    a file twice changes nothing the second time).
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or len(files) < PARALLEL_MIN_FILES:
        return [work(path) for path in files]
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = min(jobs, len(files))
    # Chunks amortise the per-task round trip while leaving several per worker to balance
    # a mix of small and large files.
    chunksize = max(1, len(files) // (workers * 4))
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, files, chunksize=chunksize))
    except (OSError, BrokenProcessPool):
        return [work(path) for path in files]
