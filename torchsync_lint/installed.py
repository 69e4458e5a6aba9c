"""What is installed next to the linter that its results depend on, read from package metadata
(never imported): TSL201/TSL203 follow the installed torchmetrics, so the result cache keys on it,
and every cache key holds the libcst release (project/cache.py).
Light on purpose: a run whose results all come from the cache asks for it and nothing else."""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache


@lru_cache(maxsize=None)
def installed_version(distribution: str) -> str | None:
    """The installed ``distribution``'s version, read from its metadata (it is not imported),
    or None; once per process and name."""
    found = _dist_info_version(distribution)
    if found is not None:
        return found
    from importlib import metadata  # (36 ms to import: only where the fast path cannot tell)

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a broken environment must not break linting
        return None


def installed_torchmetrics_version() -> str | None:
    """The installed torchmetrics release (every file's cache key asks for it)."""
    return installed_version("torchmetrics")


def _dist_info_version(distribution: str) -> str | None:
    """The version in the name of the one ``<name>-<version>.dist-info`` folder beside the
    package of the same name (how pip installs torchmetrics and libcst), or None when that is
    not what is there (no such package, an egg, an editable install, two dist-infos): then
    importlib.metadata decides. ``find_spec`` of a top-level name imports nothing."""
    try:
        spec = importlib.util.find_spec(distribution)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    prefix = distribution.replace("-", "_").lower() + "-"
    try:
        names = [n for n in os.listdir(site) if n.lower().startswith(prefix) and n.endswith(".dist-info")]
    except OSError:
        return None
    if len(names) != 1:
        return None
    version = names[0][len(prefix) : -len(".dist-info")]
    return version or None
