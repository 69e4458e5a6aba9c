"""Shared semantic analysis used by every rule family.

- ``tree``: one iterative walk numbering every syntax node in source order;
- ``positions``: line/column of the nodes a rule reports, computed on demand;
- ``index``: one pass over the walk that records imports, bindings, classes, calls and loops;
- ``values``: what an expression holds (device tensor, host value, model, loader...);
- ``hotloops``: which code runs per training step and whether a step interval gates it.

Rule families add their own trackers on top (metrics, data loaders) in sibling modules.

The package itself imports nothing: a run whose results all come from the cache never loads
libcst (start-up is most of a cached run). Its names resolve on first use.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "ModuleAnalysis": "torchsync_lint.analysis.module",
    "HotContext": "torchsync_lint.analysis.hotloops",
    "ImportMap": "torchsync_lint.analysis.imports",
    "canonical": "torchsync_lint.analysis.imports",
    "dotted_parts": "torchsync_lint.analysis.imports",
    "Kind": "torchsync_lint.analysis.kinds",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
