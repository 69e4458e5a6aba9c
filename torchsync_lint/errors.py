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
