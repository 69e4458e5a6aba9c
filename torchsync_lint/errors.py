"""Codes for files we could not lint. They are not rules: they cannot be selected or ignored."""

from __future__ import annotations

from torchsync_lint.types import Finding

FILE_ERRORS = {
    "TSL900": ("syntax-error", "the file does not parse as Python"),
    "TSL901": ("undecodable-file", "the file is binary or not valid in its declared encoding"),
    "TSL902": ("unreadable-path", "the path cannot be read (missing, permissions, symlink loop)"),
    "TSL903": ("internal-error", "a rule crashed on this file; other rules and files still ran"),
}


def file_error(path: str, code: str, message: str, line: int = 1, column: int = 1) -> Finding:
    name = FILE_ERRORS[code][0]
    return Finding(path, line, column, line, column, code, name, message, severity="error")


def describe_exception(exc: BaseException, limit: int = 200) -> str:
    """``Type: message`` cut to ``limit`` characters: a RecursionError's message, or a value's
    repr inside one, must not turn one file's error into megabytes of output."""
    if isinstance(exc, RecursionError) or isinstance(exc.__context__, RecursionError):
        return "RecursionError (nested too deeply)"
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - str() of a deep value can overflow the stack itself
        text = f"{type(exc).__name__} (its message could not be rendered)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def syntax_error(path: str, source: str, exc) -> Finding:
    """TSL900 for a file libcst cannot parse, in Python's own words and at Python's position
    when Python rejects it too (libcst's message lists expected tokens, often lines away)."""
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as err:  # IndentationError and TabError included
        line = err.lineno or 1
        column = err.offset if err.offset and err.offset > 0 else 1
        return file_error(path, "TSL900", f"cannot parse: {err.msg}", line, column)
    except (ValueError, RecursionError, MemoryError) as err:  # null bytes; pathological nesting
        return file_error(path, "TSL900", f"cannot parse: {describe_exception(err)}")
    message = getattr(exc, "message", str(exc)).splitlines()[0] if str(exc) else "unknown error"
    return file_error(
        path, "TSL900", f"cannot parse with libcst although Python accepts it: {message}",
        getattr(exc, "raw_line", 1) or 1, (getattr(exc, "raw_column", 0) or 0) + 1,
    )
