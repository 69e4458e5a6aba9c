"""What is installed next to the linter that its results depend on, read from package metadata
(never imported): TSL201/TSL203 follow the installed torchmetrics, so the result cache keys on it,
and every cache key holds the libcst release (project/cache.py).
Light on purpose: a run whose results all come from the cache asks for it and nothing else."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def installed_version(distribution: str) -> str | None:
    """The installed ``distribution``'s version, read from its metadata (it is not imported),
    or None; once per process and name."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a broken environment must not break linting
        return None


def installed_torchmetrics_version() -> str | None:
    """The installed torchmetrics release (every file's cache key asks for it)."""
    return installed_version("torchmetrics")
