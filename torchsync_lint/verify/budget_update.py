"""``--update-budget``'s write: merge this run's measurements into the budget file as it is
*now*, under a lock, so that two runs updating one file at once both land.

A run reads the budget when it starts and writes it minutes later, after its scripts ran.
Writing back what it read would drop every script another run added in between (both would
say "written", one script lost). So the write takes an exclusive lock (``fcntl.flock`` on a
sidecar file ``.NAME.lock`` beside the budget: the budget itself is replaced by a rename, so
a lock on it would be on the old inode), re-reads the file, replaces only the scripts this
run measured (each keeping the `tolerance` the file holds now: it is the user's), and writes
atomically, refusing if the file changed after that re-read (an editor, or a writer that does
not lock: atomic.py's ChangedOnDisk, as --fix does). The lock file is removed on release.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from torchsync_lint.atomic import WriteError
from torchsync_lint.verify import budget_file
from torchsync_lint.verify.budget import BudgetFile, ScriptBudget

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock; the fingerprint check still refuses a lost update
    fcntl = None  # type: ignore[assignment]

LOCK_TIMEOUT_S = 60.0  # a holder only re-reads, merges and writes one small file
_POLL_S = 0.02


def lock_path(path: str) -> str:
    """The sidecar of the file ``path`` leads to: two spellings of one budget (a symlink
    to it) take the same lock."""
    directory, name = os.path.split(os.path.realpath(path))
    return os.path.join(directory, f".{name}.lock")


def update(path: str, measured: dict[str, ScriptBudget], timeout: float = LOCK_TIMEOUT_S) -> bool:
    """Write the budget at ``path`` with the scripts of ``measured`` replaced and every other
    script as the file holds it now; whether the file changed. WriteError: the file is as it
    was (it could not be locked or written, became malformed, or changed while merging)."""
    with locked(path, timeout):
        current, seen = _current(path)
        for key, entry in measured.items():
            old = current.scripts.get(key)
            current.scripts[key] = entry if old is None else replace(entry, tolerance=old.tolerance)
        return budget_file.write(current, path, expected=seen)


def _current(path: str) -> tuple[BudgetFile, tuple | None]:
    """The budget as the file holds it now (a new one when it is gone) and its fingerprint."""
    if not os.path.lexists(path):
        return BudgetFile(path), None
    try:
        return budget_file.load_with_fingerprint(path)
    except budget_file.BudgetError as exc:
        raise WriteError(f"the budget file changed since this run read it and is no longer valid ({exc}); it was left as it is") from None


@contextmanager
def locked(path: str, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the exclusive lock of the budget ``path`` (WriteError after ``timeout`` seconds)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    sidecar = lock_path(path)
    fd = _acquire(sidecar, time.monotonic() + timeout, timeout)
    try:
        yield
    finally:
        # Removed while still held: a waiter that then gets the lock on the removed file sees
        # that the name no longer leads to it and locks the new one (_acquire).
        try:
            os.unlink(sidecar)
        except OSError:
            pass
        os.close(fd)


def _acquire(sidecar: str, deadline: float, timeout: float) -> int:
    while True:
        try:
            fd = os.open(sidecar, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise WriteError(f"cannot create its lock file {sidecar}: {exc.strerror or exc}") from exc
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise WriteError(f"another torchsync-lint held its lock ({sidecar}) for over {timeout:g}s; it was left as it is (run again)") from None
                    time.sleep(_POLL_S)
            try:
                current = os.path.samestat(os.fstat(fd), os.stat(sidecar))
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            return fd
        os.close(fd)  # the previous holder removed this one on release: lock the file now there
