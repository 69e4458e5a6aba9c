"""Output formats: pure functions of the lint results (and the rule registry).

Each reporter module registers itself in ``FORMATS`` under its ``--format`` key.
"""

from __future__ import annotations

from typing import Callable

from torchsync_lint.types import FileResult

Reporter = Callable[[list[FileResult], dict], str]
FORMATS: dict[str, Reporter] = {}


def register(name: str):
    def deco(fn: Reporter) -> Reporter:
        FORMATS[name] = fn
        return fn

    return deco


def all_findings(results: list[FileResult]):
    """Every finding and file error, sorted by path, line, column."""
    items = [f for r in results for f in (*r.findings, *r.errors)]
    return sorted(items, key=lambda f: f.sort_key)


def load_formats() -> dict[str, Reporter]:
    import importlib
    import pkgutil

    import torchsync_lint.reporters as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")
    return FORMATS
