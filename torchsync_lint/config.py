"""`[tool.torchsync-lint]` in pyproject.toml, and which rules are on for which file.

Selectors accept a code (`TSL101`), a prefix (`TSL1`, `TSL`), a kebab name
(`host-read-in-loop`) or `ALL`, in `select`, `extend-select`, `ignore` and per-file ignores.
Which rules are on follows ruff's resolution (selection.py): the more specific selector wins,
the command line's selectors over the file's. Which file's settings a path gets is
settings.py's (the nearest pyproject.toml with a [tool.torchsync-lint] table, as ruff).
Every value is type-checked as ruff does: a wrong type (`unsafe-fixes = "false"`), a TOML
file that does not parse, or an unknown key is a ConfigError naming the file and the key
(exit 2), never a silent default.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from torchsync_lint import globs
from torchsync_lint.selection import Selection, SelectorError, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SECTION = "torchsync-lint"

# Replaced by `exclude`, extended by `extend-exclude` (ruff's defaults, plus a few build dirs).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "build", "dist", "__pycache__",
    "node_modules", ".eggs", "*.egg-info", "site-packages", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "_build", "buck-out", ".direnv", ".ipynb_checkpoints", "__pypackages__",
)
KNOWN_KEYS = {
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores",
    "unsafe-fixes", "torchmetrics-version", "force-exclude", "respect-gitignore", "src",
    "project-depth",
}


class ConfigError(ValueError):
    """A config file or option we cannot honour (exit 2)."""


@dataclass
class Config:
    select: list[str] | None = None  # None: every rule that is on by default
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] | None = None  # None: DEFAULT_EXCLUDE
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    unsafe_fixes: bool = False
    force_exclude: bool = False  # apply excludes to paths named explicitly too (pre-commit)
    respect_gitignore: bool = True  # skip what .gitignore / .ignore exclude during walks
    torchmetrics_version: str | None = None
    src: list[str] = field(default_factory=list)  # extra source roots, relative to the root
    project_depth: int = 2  # how many imports away the project view follows a name (project/demand.py)
    root: Path = field(default_factory=Path.cwd)  # where relative patterns are anchored
    source: Path | None = None  # the pyproject.toml read, if any
    # Selectors of later sources (the command line's), applied after the file's own (selection.py).
    extra_selections: list[Selection] = field(default_factory=list)
    cache_dir: str | None = None  # `--cache-dir`: absolute; None: <project root>/.torchsync_cache

    # -- which file's settings ------------------------------------------------------------------
    def for_path(self, path: str) -> Config:
        """The settings in force for ``path``: these, for one configuration that applies to
        every file (`--config`, `--isolated`, a test's Config); settings.Hierarchy looks up the
        nearest configuration of each path."""
        return self

    def for_directory(self, directory: str) -> Config:
        """The settings in force in ``directory`` (an absolute path known to be a directory)."""
        return self

    def for_entry(self, path: str) -> Config:
        """The settings that judge ``path`` as an entry of its directory (excludes): those in
        force in the directory that holds it."""
        return self

    # -- rule selection ---------------------------------------------------------------------
    @property
    def selections(self) -> list[Selection]:
        """The sources of selectors in the order they apply: this file's, then the command line's."""
        return [Selection(self.select, list(self.extend_select), list(self.ignore)), *self.extra_selections]

    def enabled_codes(self, rules: dict, default: set[str] | None = None) -> set[str]:
        """The codes on before per-file ignores, from ``default`` (None: every rule that is on
        by default); an unknown selector is a ConfigError naming this file."""
        if default is None:
            default = {code for code, rule in rules.items() if rule.default_enabled}
        try:
            return resolve(self.selections, rules, default)
        except SelectorError as exc:
            raise self._selector_error(exc) from exc

    def codes_for_path(self, path: str, rules: dict, default: set[str] | None = None) -> set[str]:
        """The enabled codes of ``path``'s settings minus the per-file ignores whose pattern
        matches ``path``.

        As in ruff, a pattern matches the path relative to the project root or the file's
        basename (`"engine.py"` matches `src/proj/engine.py`); `"!pattern"` applies to every
        file the pattern does not match.
        """
        config = self.for_path(path)
        if config is not self:
            return config.codes_for_path(path, rules, default)
        codes = self.enabled_codes(rules, default)
        rel = self._relative(path)
        for pattern, selectors in self.per_file_ignores.items():
            negated = pattern.startswith("!")
            if globs.matches(pattern[1:] if negated else pattern, rel) != negated:
                codes -= expand(selectors, rules, self.source)
        return codes

    def _selector_error(self, exc: Exception) -> ConfigError:
        return ConfigError(f"{self.source}: {exc}" if self.source is not None else str(exc))

    def settings(self) -> dict:
        return {"torchmetrics-version": self.torchmetrics_version}

    # -- files ----------------------------------------------------------------------------
    @property
    def exclude_patterns(self) -> list[str]:
        return [*(DEFAULT_EXCLUDE if self.exclude is None else self.exclude), *self.extend_exclude]

    def is_excluded(self, path: str, walked_from: str | None = None) -> bool:
        """Does an exclude pattern match ``path`` or a directory above it?

        During a directory walk (``walked_from`` is the directory the user named), only what
        lies below that directory is matched: `torchsync-lint .venv/lib/.../torch` lints torch
        although `.venv` and `site-packages` are excluded by default.

        An entry is judged by the settings in force in the directory that holds it (a
        sub-project's directory by its parent's, its files by its own), and a configuration
        whose root lies below the walked directory matches from its root down.
        """
        config = self.for_entry(path)
        if config is not self:
            return config.is_excluded(path, walked_from)
        if walked_from is not None and os.path.isabs(self._relative(walked_from)) and not os.path.isabs(self._relative(path)):
            walked_from = str(self.root)  # the walk started above this configuration's root
        if walked_from is None:
            base, parts = "", self._relative(path).split("/")
        else:
            start = self._relative(walked_from)
            base = "" if start == "." else start.rstrip("/") + "/"
            parts = os.path.relpath(path, walked_from).replace(os.sep, "/").split("/")  # (as_posix, without a Path)
        candidates = [base + "/".join(parts[: i + 1]) for i in range(len(parts))]
        patterns = _anchored(tuple(self.exclude_patterns), str(self.root))
        return any(globs.matches_any(patterns, c) for c in candidates)

    def _relative(self, path: str) -> str:
        absolute = os.path.abspath(path)
        root, inside, given = _resolved_root(str(self.root))  # a walk asks this for every entry
        if not absolute.startswith(inside) and absolute != str(root):
            # A path through a symlink to the project (`check link/`): the root is resolved,
            # so is it: by the root as it was given when it lies there, else by the system
            # (only then: resolving costs system calls, and a walk asks per entry).
            real = inside + absolute[len(given) :] if absolute.startswith(given) else os.path.realpath(absolute)
            absolute = real if real.startswith(inside) or real == str(root) else absolute
        # (Path.relative_to's and as_posix's answers, without making Paths: on POSIX both
        # compare the normalised text; Windows compares without case, so it keeps Paths)
        if absolute.startswith(inside) and len(absolute) > len(inside):
            return absolute[len(inside) :].replace(os.sep, "/")
        if os.name == "posix":
            return "." if absolute == str(root) else absolute
        try:
            return Path(absolute).relative_to(root).as_posix()
        except ValueError:
            return Path(absolute).as_posix()

    def describe(self, rules: dict, path: str) -> str:
        """The resolved settings for ``path``, for `--show-settings` (TOML-like, one key a line)."""
        import json

        config = self.for_path(path)
        if config is not self:
            return config.describe(rules, path)

        lines = [
            f"# Resolved settings for: {path}",
            f"# Settings path: {self.source if self.source else '(none: built-in defaults)'}",
            f"# Project root (patterns are relative to it): {self.root}",
            f"[tool.{SECTION}]",
        ]
        values = {
            "select": self.select,
            "extend-select": self.extend_select,
            "ignore": self.ignore,
            "exclude": list(DEFAULT_EXCLUDE) if self.exclude is None else self.exclude,
            "extend-exclude": self.extend_exclude,
            "per-file-ignores": self.per_file_ignores,
            "unsafe-fixes": self.unsafe_fixes,
            "force-exclude": self.force_exclude,
            "respect-gitignore": self.respect_gitignore,
            "torchmetrics-version": self.torchmetrics_version,
            "project-depth": self.project_depth,
        }
        for key, value in values.items():
            shown = "(unset: every rule that is on by default)" if key == "select" and value is None else None
            if key == "torchmetrics-version" and value is None:
                shown = "(unset: the installed torchmetrics)"
            lines.append(f"{key} = {shown or json.dumps(value)}")
        for extra in self.extra_selections:
            lines.append(f"# command line: select = {json.dumps(extra.select)}, extend-select = {json.dumps(extra.extend_select)}, ignore = {json.dumps(extra.ignore)}")
        lines.append(f"# Rules enabled for this file: {', '.join(sorted(self.codes_for_path(path, rules))) or '(none)'}")
        return "\n".join(lines) + "\n"


def expand(selectors: list[str], rules: dict, source: Path | None = None) -> set[str]:
    """Codes named by selectors; an unknown selector is a ConfigError (naming ``source``, the
    file it is in, when given), not a silent no-op."""
    from torchsync_lint import selection

    try:
        return selection.expand(selectors, rules)
    except SelectorError as exc:
        raise ConfigError(f"{source}: {exc}" if source is not None else str(exc)) from exc


# -- reading pyproject.toml -----------------------------------------------------------------

def _type_name(value) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return next((name for kind, name in names.items() if type(value) is kind), type(value).__name__)


class _Table:
    """Typed access to [tool.torchsync-lint]: every error names the file and the key."""

    def __init__(self, table: dict, source: Path) -> None:
        self.table, self.source = table, source

    def error(self, key: str, expected: str, value) -> ConfigError:
        return ConfigError(f"{self.source}: [tool.{SECTION}] {key}: expected {expected}, got {_type_name(value)} ({_show(value)})")

    def boolean(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, "a boolean (true or false)", value)
        return value

    def count(self, key: str, default: int) -> int:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(key, "a whole number, 0 or more", value)
        return value

    def strings(self, key: str, value=None) -> list[str]:
        value = self.table.get(key, []) if value is None else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, "an array of strings", value)
        return value


def _show(value) -> str:
    text = repr(value) if not isinstance(value, str) else '"' + value + '"'
    return text if len(text) <= 60 else text[:57] + "..."


def read_toml(path: Path) -> dict:
    """Parse ``path``; a file that is not valid UTF-8 TOML is a ConfigError naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    if data.startswith(b"\xef\xbb\xbf"):
        raise ConfigError(f"{path}: cannot parse: the file starts with a UTF-8 byte-order mark (BOM); save it without one")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot parse: not valid UTF-8 (byte {exc.start})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}") from exc
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(f"{path}: cannot parse: arrays or tables nested too deeply") from None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.torchsync-lint] table.

    A pyproject.toml on the way that cannot be parsed is an error (as in ruff): skipping it
    would silently apply a parent's settings, or none.
    """
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and SECTION in read_toml(candidate).get("tool", {}):
            return candidate
    return None


def load_config(pyproject: Path | None) -> Config:
    if pyproject is None:
        return Config()
    tool = read_toml(pyproject).get("tool", {})
    table = tool.get(SECTION, {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.{SECTION}] must be a table")
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{pyproject}: unknown key(s) in [tool.{SECTION}]: {', '.join(sorted(unknown))}{did_you_mean(sorted(unknown), KNOWN_KEYS)}")
    typed = _Table(table, pyproject)
    config = Config(root=pyproject.parent, source=pyproject)
    if "select" in table:
        config.select = typed.strings("select")
    config.extend_select = typed.strings("extend-select")
    config.ignore = typed.strings("ignore")
    if "exclude" in table:
        config.exclude = typed.strings("exclude")
    config.extend_exclude = typed.strings("extend-exclude")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise typed.error("per-file-ignores", "a table of glob = [codes]", pfi)
    config.per_file_ignores = {k: typed.strings(f"per-file-ignores.{k}", v) for k, v in pfi.items()}
    config.unsafe_fixes = typed.boolean("unsafe-fixes", False)
    config.force_exclude = typed.boolean("force-exclude", False)
    config.respect_gitignore = typed.boolean("respect-gitignore", True)
    config.src = typed.strings("src")  # source roots for the project view (as ruff's `src`)
    config.project_depth = typed.count("project-depth", config.project_depth)
    version = table.get("torchmetrics-version")
    if version is not None:
        from torchsync_lint.analysis.metric_classes import parse_version

        if not isinstance(version, str) or parse_version(version) is None:
            raise typed.error("torchmetrics-version", 'a release number such as "1.6.2"', version)
    config.torchmetrics_version = version
    return config


def did_you_mean(unknown: list[str], known) -> str:
    """`; did you mean 'select'?` for the first of ``unknown`` that is close to a known name
    (a ruff spelling too: `extend_select` for `extend-select`), else nothing."""
    import difflib

    names = sorted(known)
    for word in unknown:
        close = difflib.get_close_matches(word.replace("_", "-").lower(), names, n=1, cutoff=0.6)
        if close:
            return f"; did you mean '{close[0]}'?" + (f" (for '{word}')" if len(unknown) > 1 else "")
    return ""


@lru_cache(maxsize=64)
def _anchored(patterns: tuple[str, ...], root: str) -> tuple[str, ...]:
    """Exclude patterns with the absolute ones made relative to the root (a walk asks for
    every entry)."""
    return tuple(os.path.relpath(p, root) if os.path.isabs(p) else p for p in patterns)


@lru_cache(maxsize=64)
def _resolved_root(root: str) -> tuple[Path, str, str]:
    """The root, symlinks resolved; the prefix of the paths inside it; the same prefix of the
    root as given (absolute, symlinks kept)."""
    resolved = Path(root).resolve()
    return resolved, _with_sep(str(resolved)), _with_sep(os.path.abspath(root))


def _with_sep(path: str) -> str:
    return path if path.endswith(os.sep) else path + os.sep
