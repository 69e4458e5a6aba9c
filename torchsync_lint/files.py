"""Finding the files to lint and reading them safely (encodings, binaries, bad paths)."""

from __future__ import annotations

import io
import os
import stat
import sys
import tokenize
from dataclasses import dataclass, replace

from torchsync_lint.atomic import WriteError, fingerprint, write_atomic
from torchsync_lint.config import Config

SUFFIXES = (".py", ".pyi", ".ipynb")  # what a directory walk lints (notebooks: notebook.py)


@dataclass(frozen=True)
class SourceFile:
    """Decoded text plus what is needed to write it back byte-for-byte faithfully."""

    text: str
    encoding: str  # as detected from a BOM or coding cookie; "utf-8-sig" keeps a BOM
    newline: str  # the file's first line ending ("\n", "\r\n" or "\r")
    # (device, inode, size, mtime, sha256) when read from disk: `--fix` checks that the file
    # is unchanged before it writes.
    fingerprint: tuple | None = None


class ReadError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# At most this much is read from one file: the largest real training or library module we
# have seen is about 1 MB, and libcst needs several hundred MB of memory per MB of source, so
# anything bigger is generated code or not code at all (a log renamed .py, /dev/zero).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


def read_source(path: str) -> SourceFile:
    """Read and decode ``path`` per PEP 263; ReadError(TSL901/TSL902) when we cannot."""
    data, taken = read_bytes(path)
    return replace(decode_source(data), fingerprint=taken)


def read_bytes(path: str) -> tuple[bytes, tuple]:
    """The bytes of ``path`` and their fingerprint (what a writer checks before it writes);
    ReadError(TSL902) when it cannot be read (read_regular: a regular file only, at most
    MAX_SOURCE_BYTES)."""
    try:
        data, st = read_regular(path, MAX_SOURCE_BYTES)
    except NotRegularFile as exc:
        raise ReadError("TSL902", f"not a regular file ({exc.kind})") from exc
    except TooLarge as exc:
        raise ReadError("TSL902", f"too large to lint: more than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB") from exc
    except OSError as exc:
        raise ReadError("TSL902", f"cannot read: {exc.strerror or exc}") from exc
    return data, fingerprint(st, data)


class NotRegularFile(OSError):
    """What is at the path is not a regular file; ``kind`` says what it is."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class TooLarge(OSError):
    """The file holds more bytes than the reader takes."""


def read_regular(path: str | os.PathLike, limit: int, *, follow: bool = True) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its fstat, when it is a regular file of at most ``limit``
    bytes; ``follow``: a symlink is followed (else opening it fails).

    The file is opened without blocking (a FIFO would wait for a writer forever) and checked
    with fstat before a byte is read, and at most ``limit`` + 1 bytes are read (a symlink to
    /dev/zero would otherwise fill the memory). NotRegularFile, TooLarge, or the OSError of
    the open or the read.
    """

    def opener(name: str, flags: int) -> int:
        return os.open(name, flags | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))

    with open(path, "rb", opener=opener) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(_kind(st.st_mode))
        if st.st_size > limit:
            raise TooLarge(f"more than {limit} bytes")
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew, or its size is not what fstat says (/proc)
        raise TooLarge(f"more than {limit} bytes")
    return data, st


def write_source(path: str, text: str, source: SourceFile, retry: str = "run --fix again") -> None:
    """Write ``text`` over ``path`` in the encoding it was read in (a BOM is kept), atomically,
    unless the file changed since ``source`` was read from it (atomic.py). WriteError when
    it could not be written; the file then holds what it held."""
    try:
        data = text.encode(source.encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        raise WriteError(f"cannot encode the new text as {source.encoding}: {exc}") from exc
    write_atomic(path, data, expected=source.fingerprint, retry=retry)


def read_stdin_bytes() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream (tests replace sys.stdin with a StringIO)
        return sys.stdin.read().encode("utf-8")
    data = stream.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise ReadError("TSL902", f"too large to lint: more than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB")
    return data


def decode_source(data: bytes) -> SourceFile:
    if b"\x00" in data:
        raise ReadError("TSL901", "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise ReadError("TSL901", f"cannot decode: {reason}") from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(text, encoding, _newline(text))


def _newline(text: str) -> str:
    head = text[:100000]
    return "\r\n" if "\r\n" in head else ("\r" if "\r" in head else "\n")


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def is_source_name(name: str) -> bool:
    return name.endswith(SUFFIXES)


def discover(paths: list[str], config: Config, notes: list[str] | None = None) -> tuple[list[str], list[tuple[str, ReadError]]]:
    """Expand directories to their source files (sorted), honouring excludes and ignore files.

    Paths named explicitly are always linted, as in ruff; excludes apply to what a
    directory walk finds, and to explicit paths too under ``config.force_exclude`` (pre-commit
    passes every staged file by name). `.gitignore`/`.ignore` apply to walks unless
    ``config.respect_gitignore`` is off. A walk lints regular files only: a FIFO, socket or
    device (or a symlink to one) is skipped with a note in ``notes`` (printed to stderr when
    None), never opened. Symlinked directories are not followed, which also makes symlink
    loops harmless.
    """
    files: list[str] = []
    errors: dict[str, tuple[str, ReadError]] = {}  # by _path_key: a path named twice is one error
    skipped: list[str] = []
    for given in paths:
        if given == "-":
            files.append(given)
            continue
        if config.for_entry(given).force_exclude and config.is_excluded(given):
            continue
        if os.path.isdir(given):
            files += _walk(given, config, skipped)
        elif os.path.isfile(given):
            files.append(given)
        elif _path_key(given) not in errors:
            errors[_path_key(given)] = (given, _path_error(given))
    if notes is None:
        for note in skipped:
            print(f"torchsync-lint: warning: {note}", file=sys.stderr)
    else:
        notes += skipped
    # One file named twice, or named and found by a walk (`src src/a.py ./src/a.py`), is
    # linted once, under the first spelling.
    unique: dict[str, str] = {}
    for f in files:
        unique.setdefault(_path_key(f), f)
    return list(unique.values()), list(errors.values())


def _path_key(path: str) -> str:
    """What tells files apart: the normalised absolute path (`-`, standard input, as is)."""
    return path if path == "-" else os.path.normcase(os.path.abspath(path))


# The tool's own cache (project/cache.py): it never holds sources, and outside a git repository
# its `.gitignore` does not apply, so a walk would otherwise list its thousands of entries on
# every run of a project whose cache is on.
CACHE_DIR = ".torchsync_cache"


def _walk(given: str, config: Config, skipped: list[str]) -> list[str]:
    from torchsync_lint.gitignore import Matcher, matcher_for_walk

    found: list[str] = []
    respect_gitignore = config.for_path(given).respect_gitignore  # the walked directory's setting
    cache_dir = config.cache_dir  # `--cache-dir`, when it lies inside the walk
    ignore = matcher_for_walk(given) if respect_gitignore else Matcher()
    matchers = {os.path.abspath(given): ignore}
    for root, dirs, names in os.walk(given, followlinks=False):
        matcher = matchers.pop(os.path.abspath(root))
        kept = []
        for d in sorted(dirs):
            full = os.path.join(root, d)
            if d == CACHE_DIR or (cache_dir is not None and os.path.abspath(full) == cache_dir) or config.is_excluded(full, given) or matcher.ignored(os.path.abspath(full), True):
                continue
            kept.append(d)
            if respect_gitignore:
                matchers[os.path.abspath(full)] = matcher.descend(os.path.abspath(full))
            else:
                matchers[os.path.abspath(full)] = matcher
        dirs[:] = kept
        for name in sorted(names):
            full = os.path.join(root, name)
            if not is_source_name(name) or config.is_excluded(full, given) or matcher.ignored(os.path.abspath(full), False):
                continue
            shown = _tidy(full, given)
            try:
                mode = os.stat(full).st_mode
            except OSError:
                found.append(shown)  # a dangling symlink: reading it reports TSL902
                continue
            if stat.S_ISREG(mode):
                found.append(shown)
            else:
                skipped.append(f"skipped {shown}: {_kind(mode)}, not a regular file")
    return found


def _tidy(full: str, given: str) -> str:
    # Keep the path as the user spelled it (`fixtures/` + `a.py` -> `fixtures/a.py`), without
    # the `./` a walk of `.` puts in front (ruff prints `a.py`, not `./a.py`).
    path = full.replace("//", "/") if given.endswith("/") else full
    while path.startswith("./"):
        path = path[2:]
    return path


def _path_error(path: str) -> ReadError:
    try:
        os.stat(path)
    except OSError as exc:
        return ReadError("TSL902", f"cannot read: {exc.strerror or exc}")
    return ReadError("TSL902", "not a regular file or directory")
