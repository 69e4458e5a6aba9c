"""Where `--fix` and `--add-noqa` may write: inside the root of the project being linted.

A file symlink in the project (`link.py -> ../outside/train.py`) is linted like any other
file, but rewriting it would write its target: another checkout, a vendored or installed
library, anything the link points at. Such a file is linted and its findings reported, but
it is not written (a warning names the target), unless the user named the target itself on
the command line (a path that is not a symlink: then the write is what was asked for).
`--diff` leaves it out for the same reason: the diff is what `--fix` would write.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from torchsync_lint.project.layout import project_root


def named_targets(paths: Iterable[str]) -> frozenset[str]:
    """The real paths of the files named on the command line that are not symlinks."""
    return frozenset(os.path.realpath(p) for p in paths if p != "-" and not os.path.islink(p) and os.path.isfile(p))


def outside_target(path: str, named: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(the file a write to ``path`` would change, the project root it is outside of) when
    that file is outside the root of ``path``'s project (symlinks resolved) and was not named
    in ``named``; None when ``path`` may be written."""
    real = os.path.realpath(path)
    if real in named:
        return None
    root = os.path.realpath(project_root(path)[0])
    try:
        if os.path.commonpath([real, root]) == root:
            return None
    except ValueError:  # another drive (Windows)
        pass
    return real, root


def warning(path: str, target: tuple[str, str]) -> str:
    real, root = target
    return (f"torchsync-lint: warning: {path}: not written: it leads to {real}, outside the project root {root} "
            f"(its findings are reported; name {real} itself to change it)")
