"""Finding the files to lint and reading them safely (encodings, binaries, bad paths)."""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass

from torchsync_lint.config import Config

SUFFIXES = (".py", ".pyi", ".ipynb")  # what a directory walk lints (notebooks: notebook.py)


@dataclass(frozen=True)
class SourceFile:
    """Decoded text plus what is needed to write it back byte-for-byte faithfully."""

    text: str
    encoding: str  # as detected from a BOM or coding cookie; "utf-8-sig" keeps a BOM
    newline: str  # the file's first line ending ("\n", "\r\n" or "\r")


class ReadError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def read_source(path: str) -> SourceFile:
    """Read and decode ``path`` per PEP 263; ReadError(TSL901/TSL902) when we cannot."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReadError("TSL902", f"cannot read: {exc.strerror or exc}") from exc
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
    newline = "\r\n" if "\r\n" in text[:100000] else ("\r" if "\r" in text[:100000] else "\n")
    return SourceFile(text, encoding, newline)


def discover(paths: list[str], config: Config) -> tuple[list[str], list[tuple[str, ReadError]]]:
    """Expand directories to their *.py, *.pyi and *.ipynb files (sorted), honouring excludes.

    Paths named explicitly are always linted, as in ruff; excludes apply to what a
    directory walk finds, and to explicit paths too under ``config.force_exclude`` (pre-commit
    passes every staged file by name). Symlinked directories are not followed, which also makes
    symlink loops harmless.
    """
    files: list[str] = []
    errors: list[tuple[str, ReadError]] = []
    for given in paths:
        if given == "-":
            files.append(given)
            continue
        if config.force_exclude and config.is_excluded(given):
            continue
        if os.path.isdir(given):
            for root, dirs, names in os.walk(given, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not config.is_excluded(os.path.join(root, d), given))
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if name.endswith(SUFFIXES) and not config.is_excluded(full, given):
                        files.append(_tidy(full, given))
        elif os.path.isfile(given):
            files.append(given)
        else:
            errors.append((given, _path_error(given)))
    seen: set[str] = set()
    unique = [f for f in files if not (f in seen or seen.add(f))]
    return unique, errors


def _tidy(full: str, given: str) -> str:
    # Keep the path as the user spelled it: `fixtures/` + `a.py` -> `fixtures/a.py`.
    return full.replace("//", "/") if given.endswith("/") else full


def _path_error(path: str) -> ReadError:
    try:
        os.stat(path)
    except OSError as exc:
        return ReadError("TSL902", f"cannot read: {exc.strerror or exc}")
    return ReadError("TSL902", "not a regular file or directory")

