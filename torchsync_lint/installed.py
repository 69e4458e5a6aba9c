"""What is installed next to the linter that its results depend on, read from package metadata
(never imported): TSL201/TSL203 follow the installed torchmetrics, so the result cache keys on it.
Light on purpose: a run whose results all come from the cache asks for it and nothing else."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def installed_torchmetrics_version() -> str | None:
    """The installed distribution's version, read from its metadata (torchmetrics is not
    imported); once per process, as every file's cache key asks for it."""
    from importlib import metadata

    try:
        return metadata.version("torchmetrics")
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a broken environment must not break linting
        return None
