"""`[tool.torchsync-lint]` in pyproject.toml, and which rules are on for which file.

Selectors accept a code (`TSL101`), a prefix (`TSL1`, `TSL`), a kebab name
(`host-read-in-loop`) or `ALL`, in `select`, `extend-select`, `ignore` and per-file ignores.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SECTION = "torchsync-lint"

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "build", "dist", "__pycache__",
    "node_modules", ".eggs", "*.egg-info", "site-packages", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "_build", "buck-out", ".direnv", ".ipynb_checkpoints", "__pypackages__",
)
KNOWN_KEYS = {
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores",
    "unsafe-fixes", "torchmetrics-version", "force-exclude",
}


class ConfigError(ValueError):
    """A config file or option we cannot honour (exit 2)."""


@dataclass
class Config:
    select: list[str] | None = None  # None: every rule that is on by default
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    unsafe_fixes: bool = False
    force_exclude: bool = False  # apply excludes to paths named explicitly too (pre-commit)
    torchmetrics_version: str | None = None
    root: Path = field(default_factory=Path.cwd)  # where relative patterns are anchored
    source: Path | None = None  # the pyproject.toml read, if any

    # -- rule selection ---------------------------------------------------------------------
    def enabled_codes(self, rules: dict) -> set[str]:
        if self.select is None:
            chosen = {code for code, rule in rules.items() if rule.default_enabled}
        else:
            chosen = expand(self.select, rules)
        chosen |= expand(self.extend_select, rules)
        chosen -= expand(self.ignore, rules)
        return chosen

    def codes_for_path(self, path: str, rules: dict) -> set[str]:
        codes = self.enabled_codes(rules)
        rel = self._relative(path)
        for pattern, selectors in self.per_file_ignores.items():
            if _glob_match(rel, pattern):
                codes -= expand(selectors, rules)
        return codes

    def settings(self) -> dict:
        return {"torchmetrics-version": self.torchmetrics_version}

    # -- files ----------------------------------------------------------------------------
    def is_excluded(self, path: str, walked_from: str | None = None) -> bool:
        """Does an exclude pattern match ``path``?

        During a directory walk (``walked_from`` is the directory the user named), only what
        lies below that directory is matched: `torchsync-lint .venv/lib/.../torch` lints torch
        although `.venv` and `site-packages` are excluded by default.
        """
        patterns = [*DEFAULT_EXCLUDE, *self.exclude, *self.extend_exclude]
        rel = self._relative(path)
        if walked_from is None:
            below, start = Path(rel).parts, None
        else:
            below, start = Path(os.path.relpath(path, walked_from)).parts, self._relative(walked_from)
        for pattern in patterns:
            if any(fnmatch.fnmatch(part, pattern) for part in below):
                return True
            if _glob_match(rel, pattern) and not (start is not None and start != "." and _glob_match(start, pattern)):
                return True
        return False

    def _relative(self, path: str) -> str:
        absolute = os.path.abspath(path)
        try:
            return Path(absolute).relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return Path(absolute).as_posix()


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*") or rel == pattern


def expand(selectors: list[str], rules: dict) -> set[str]:
    """Codes named by selectors; an unknown selector is a ConfigError, not a silent no-op."""
    codes: set[str] = set()
    for raw in selectors:
        sel = raw.strip()
        if not sel:
            continue
        if sel.upper() == "ALL":
            codes |= set(rules)
            continue
        by_name = {rule.name: code for code, rule in rules.items()}
        if sel in by_name:
            codes.add(by_name[sel])
            continue
        matched = {code for code in rules if code.startswith(sel.upper())}
        if not matched:
            raise ConfigError(f"unknown rule selector {raw!r} (use a code like TSL101, a prefix like TSL1, a rule name, or ALL)")
        codes |= matched
    return codes


def _as_list(value, key: str) -> list[str]:
    if isinstance(value, str):
        return [s for s in value.replace(",", " ").split()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ConfigError(f"`{key}` must be a list of strings")


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.torchsync-lint] table."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if SECTION in data.get("tool", {}):
                return candidate
    return None


def load_config(pyproject: Path | None) -> Config:
    if pyproject is None:
        return Config()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read config: {exc}") from exc
    table = data.get("tool", {}).get(SECTION, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.{SECTION}] must be a table")
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{pyproject}: unknown key(s) in [tool.{SECTION}]: {', '.join(sorted(unknown))}")
    config = Config(root=pyproject.parent, source=pyproject)
    if "select" in table:
        config.select = _as_list(table["select"], "select")
    config.extend_select = _as_list(table.get("extend-select", []), "extend-select")
    config.ignore = _as_list(table.get("ignore", []), "ignore")
    config.exclude = _as_list(table.get("exclude", []), "exclude")
    config.extend_exclude = _as_list(table.get("extend-exclude", []), "extend-exclude")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError("`per-file-ignores` must be a table of glob = [codes]")
    config.per_file_ignores = {k: _as_list(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
    config.unsafe_fixes = bool(table.get("unsafe-fixes", False))
    config.force_exclude = bool(table.get("force-exclude", False))
    version = table.get("torchmetrics-version")
    if version is not None and not isinstance(version, str):
        raise ConfigError("`torchmetrics-version` must be a string such as \"1.6.0\"")
    config.torchmetrics_version = version
    return config
