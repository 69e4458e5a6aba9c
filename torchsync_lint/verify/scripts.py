"""Which scripts to verify, and their fixture pragmas."""

from __future__ import annotations

import importlib.util
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from torchsync_lint.verify import steady_state

PRAGMA = "# torchsync-fixture:"


@dataclass
class Script:
    path: str
    steps: int = steady_state.DEFAULT_STEPS
    warmup: int = steady_state.DEFAULT_WARMUP
    requires: list[str] = field(default_factory=list)
    is_fixture: bool = False  # carries the fixture pragma: exiting without its RESULT line is an early exit

    @property
    def missing_requirements(self) -> list[str]:
        # find_spec, not import: a missing optional dependency must not cost an import here.
        return [name for name in self.requires if importlib.util.find_spec(name) is None]

    @property
    def fixed_path(self) -> str | None:
        candidate = self.path[: -len(".py")] + ".fixed.py"
        return candidate if os.path.exists(candidate) else None


def is_fixed_variant(path: str) -> bool:
    return path.endswith(".fixed.py")


def has_pragma(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            return any(PRAGMA in line for _, line in zip(range(40), handle))
    except (OSError, UnicodeDecodeError):
        return False


def read_pragmas(path: str) -> dict[str, str]:
    from torchsync_lint.markers import read_pragmas as read

    try:
        return read(path)
    except (OSError, UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return {}  # an unreadable file is still replayed; the run reports what is wrong


def load_script(path: str, steps: int | None = None, warmup: int | None = None) -> Script:
    pragmas = read_pragmas(path)
    requires = [name for name in pragmas.get("requires", "").split(",") if name]
    return Script(
        path=path,
        steps=steps if steps is not None else _int(pragmas.get("steps"), steady_state.DEFAULT_STEPS),
        warmup=warmup if warmup is not None else _int(pragmas.get("warmup"), steady_state.DEFAULT_WARMUP),
        requires=requires,
        is_fixture=has_pragma(path),
    )


def discover(paths: list[str]) -> tuple[list[str], list[str]]:
    """Expand paths into script files. A directory contributes its ``*.py`` files that carry
    the fixture pragma (helpers and ``*.fixed.py`` variants are not scripts to check); a file
    given explicitly is always used unless it is a ``*.fixed.py`` variant.

    Returns (scripts, missing paths).
    """
    found: list[str] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += [str(p) for p in sorted(path.rglob("*.py")) if not is_fixed_variant(p.name) and has_pragma(str(p))]
        elif path.is_file():
            if not is_fixed_variant(path.name):
                found.append(str(path))
        else:
            missing.append(raw)
    return list(dict.fromkeys(found)), missing


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
