"""What a cache entry must look like to be used (project/cache.py makes a failed check a miss,
and the recomputed value replaces the entry)."""

from __future__ import annotations

from torchsync_lint.project.view import SUMMARY_VERSION
from torchsync_lint.types import Finding


def valid_names(value) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def valid_graph(files: list[str], value) -> bool:
    """The import graph's shape, over exactly these files."""
    if not isinstance(value, dict):
        return False
    known = set(files)
    for part in ("imports", "reach"):
        table = value.get(part)
        if not isinstance(table, dict) or set(table) != known:
            return False
        if not all(isinstance(t, list) and all(isinstance(x, str) and x in known for x in t) for t in table.values()):
            return False
    return True


_SUMMARY_PARTS = {"functions": dict, "classes": dict, "values": dict, "aliases": dict, "stars": list, "calls": list, "feeds": list, "loaders": list, "datasets": list}


def valid_summary(rel: str, value) -> bool:
    """A summary of ``rel`` in this tool's format (its top level: the parts the view reads)."""
    return (
        isinstance(value, dict) and value.get("version") == SUMMARY_VERSION and value.get("path") == rel
        and all(isinstance(value.get(part), kind) for part, kind in _SUMMARY_PARTS.items())
        and all(isinstance(call, dict) and isinstance(call.get("callee"), str) for call in value["calls"])
    )


def cached_findings(cache, key: str) -> list[Finding] | None:
    cached = cache.get("results", key, lambda v: isinstance(v, list) and all(isinstance(d, dict) for d in v))
    if cached is None:
        return None
    try:
        return [Finding.from_dict(d) for d in cached]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
