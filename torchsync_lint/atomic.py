"""Writing a file so that it holds its old bytes or its new bytes, never a mix of the two.

Every writer of the tool goes through ``write_atomic``: `--fix`, `--add-noqa`, notebook fixes
and the cache. What it guarantees when a write fails half-way:

- **A file with one name** gets its new bytes in a temporary file beside it, which is then
  renamed over it (``os.replace`` is atomic): a full disk, a quota, an exception, even a
  killed process leaves the old bytes or the new ones. A failed write removes the temporary
  file, so a full disk leaves no partial entry behind.
- **A file with several hard links** must be rewritten in place (a rename would leave the
  other names on the old text). The space is reserved first (``fallocate`` keeping the size,
  where the file system has it); should the write still fail or be interrupted (a full disk,
  Ctrl-C), the original bytes, which the caller read and this function re-checked, are
  written back over the same blocks before the error (or the interruption) goes on, and the
  error says whether that worked. What nothing can undo is a process killed outright
  (SIGKILL) or a power loss during that in-place write: the file may then hold a mix.
- **A file edited since it was read** (``expected``: the fingerprint taken when it was
  read) is left alone: ``ChangedOnDisk``. The check runs just before the rename.

``DISK`` holds the two system calls whose failure this must survive; tests put a simulated
full disk there (tests/test_atomic_writes.py).
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
import tempfile

TEMP_SUFFIX = ".tsl-tmp"


class WriteError(Exception):
    """The file could not be written; its bytes on disk are what they were before."""


class ChangedOnDisk(WriteError):
    """The file no longer holds what was read; it was left as it is."""


def fingerprint(st: os.stat_result, data: bytes) -> tuple:
    """What a writer compares just before it writes, to leave a file edited meanwhile alone:
    (device, inode, size, mtime, sha256 of the content)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, hashlib.sha256(data).hexdigest())


class Disk:
    """Writes and space reservations, as the operating system does them."""

    def write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def reserve(self, fd: int, size: int) -> None:
        """Allocate room for ``size`` bytes without changing the file's size or content
        (Linux ``fallocate(FALLOC_FL_KEEP_SIZE)``). OSError(ENOSPC) when there is none; a
        file system or platform without it is not an error (the write is then the test)."""
        fallocate = _fallocate()
        if fallocate is None or size <= 0:
            return
        if fallocate(fd, _FALLOC_FL_KEEP_SIZE, 0, size) != 0:
            import ctypes

            code = ctypes.get_errno()
            if code in (errno.ENOSPC, errno.EDQUOT):
                raise OSError(code, os.strerror(code))


DISK = Disk()
_FALLOC_FL_KEEP_SIZE = 1
_FALLOCATE: list = []


def _fallocate():
    if not _FALLOCATE:
        function = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.fallocate64 if hasattr(libc, "fallocate64") else libc.fallocate
            function.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
            function.restype = ctypes.c_int
        except (OSError, AttributeError, ImportError):
            function = None
        _FALLOCATE.append(function)
    return _FALLOCATE[0]


def write_atomic(path: str, data: bytes, *, expected: tuple | None = None, durable: bool = True, retry: str = "run again") -> None:
    """Make ``path`` hold ``data``, atomically, or raise WriteError and leave it as it was.

    ``expected``: the fingerprint of the file as read; a file that no longer matches it is
    left alone (ChangedOnDisk, whose message ends with ``retry``). A symlink is written
    through (the link stays a link); an existing file keeps its permission bits and hard
    links, and its owner and group where this process may set them (only root may give a
    file away: a file of another owner rewritten by a user becomes that user's).
    ``durable``: fsync the data and the directory (not for a cache entry).
    """
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteError(f"cannot write: {_reason(exc)}") from exc
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise WriteError("cannot write: not a regular file")
        if not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(real, os.W_OK):
            raise WriteError("cannot write: the file is read-only")
    elif expected is not None:
        raise ChangedOnDisk(f"the file changed on disk since it was read (it was removed); it was left as it is ({retry})")
    if st is not None and st.st_nlink > 1:
        _rewrite_in_place(real, data, expected, durable, retry)
        return
    _replace(real, data, st, expected, durable, retry)


def _replace(real: str, data: bytes, st: os.stat_result | None, expected: tuple | None, durable: bool, retry: str) -> None:
    directory = os.path.dirname(real) or "."
    try:
        # A new file gets the permissions open() would give it (0o666 less the umask).
        fd, tmp = _create_temp(directory, os.path.basename(real), 0o600 if st is not None else 0o666)
    except OSError as exc:
        raise WriteError(f"cannot write in {directory}: {_reason(exc)}") from exc
    try:
        try:
            DISK.write(fd, data)
            if durable:
                os.fsync(fd)
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                    try:
                        os.fchown(fd, st.st_uid, st.st_gid)
                    except OSError:
                        pass  # only root may give a file away; the content still lands
        finally:
            os.close(fd)
        _check_unchanged(real, expected, retry)
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write: {_reason(exc)}") from exc
        raise
    if durable:
        _fsync_directory(directory)


def _rewrite_in_place(real: str, data: bytes, expected: tuple | None, durable: bool, retry: str) -> None:
    """Overwrite the file's own inode: every hard link sees the new text, or, when the write
    fails, the old one."""
    try:
        fd = os.open(real, os.O_RDWR)
    except OSError as exc:
        raise WriteError(f"cannot write: {_reason(exc)}") from exc
    try:
        original = _read_all(fd)
        if expected is not None and fingerprint(os.fstat(fd), original) != expected:
            raise ChangedOnDisk(_changed_message(retry))
        try:
            DISK.reserve(fd, len(data))
        except OSError as exc:
            raise WriteError(f"cannot write: {_reason(exc)}; the file was left as it is") from exc
        try:
            _overwrite(fd, data, durable)
        except BaseException as exc:  # a full disk, or Ctrl-C half-way: the old bytes go back first
            why = _reason(exc) if isinstance(exc, OSError) else f"interrupted ({type(exc).__name__})"
            try:
                _overwrite(fd, original, durable)
            except OSError as again:
                saved = _save_elsewhere(original, os.path.basename(real))
                raise WriteError(
                    f"cannot write in place (the file has hard links): {why}; putting its original text back "
                    f"failed too ({_reason(again)}), so the file may be damaged: {saved}"
                ) from again
            if not isinstance(exc, OSError):
                raise  # the interruption goes on, the file as it was
            raise WriteError(f"cannot write in place (the file has hard links): {why}; its original text was put back") from exc
    finally:
        os.close(fd)


def _overwrite(fd: int, data: bytes, durable: bool) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    DISK.write(fd, data)
    os.ftruncate(fd, len(data))
    if durable:
        os.fsync(fd)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _save_elsewhere(data: bytes, name: str) -> str:
    """Keep the original text somewhere else (another file system, if the temp dir is one)."""
    try:
        fd, kept = tempfile.mkstemp(prefix=f"{name}.", suffix=".original")
    except OSError:
        return "its original text could not be saved anywhere; restore it from version control"
    try:
        try:
            DISK.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        os.unlink(kept)
        return "its original text could not be saved anywhere; restore it from version control"
    return f"its original text is in {kept}"


def _check_unchanged(real: str, expected: tuple | None, retry: str) -> None:
    if expected is None:
        return
    try:
        with open(real, "rb") as fh:
            now = fingerprint(os.fstat(fh.fileno()), fh.read())
    except FileNotFoundError as exc:
        raise ChangedOnDisk(_changed_message(retry)) from exc
    except OSError as exc:
        raise WriteError(f"cannot write: {_reason(exc)}") from exc
    if now != expected:
        raise ChangedOnDisk(_changed_message(retry))


def _changed_message(retry: str) -> str:
    return f"the file changed on disk since it was read; it was left as it is ({retry})"


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create_temp(directory: str, name: str, mode: int) -> tuple[int, str]:
    for _ in range(100):
        path = os.path.join(directory, f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
