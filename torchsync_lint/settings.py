"""Which settings each file gets: ruff's hierarchy of configuration files.

- Each file gets the settings of its nearest configuration: the nearest pyproject.toml at or
  above its directory that has a [tool.torchsync-lint] table. A pyproject.toml without one is
  skipped (as ruff skips one without [tool.ruff]): the search goes on above it. Settings are
  not merged across files: the nearest table is the whole configuration, and its patterns
  (`exclude`, `per-file-ignores`) are relative to its directory.
- A file with no such table above it gets the built-in defaults; standard input (without
  `--stdin-filename`) gets the settings of the working directory.
- `--config FILE` applies FILE to every file, and `--isolated` the defaults (no lookup).
- What the command line sets (Overrides: `--select`, `--ignore`, `--exclude`,
  `--per-file-ignores`, ...) applies over every file's configuration.

The answer never depends on which file a run names first or on the order of the files.
Hierarchy is a Config (its own values are those in force in the working directory, for what
is asked without a path), so every entry point takes it where it took one Config.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from torchsync_lint.config import Config, ConfigError, find_pyproject, load_config, read_toml, SECTION
from torchsync_lint.selection import Selection


@dataclass
class Overrides:
    """Settings given on the command line; None (or empty): the configuration's own."""

    selection: Selection = field(default_factory=Selection)
    exclude: list[str] | None = None  # replaces `exclude`
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] | None = None  # replaces `per-file-ignores`
    extend_per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    unsafe_fixes: bool | None = None
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None
    cache_dir: str | None = None

    def apply(self, config: Config) -> Config:
        """A copy of ``config`` with these settings over its own."""
        new = replace(config, extra_selections=[*config.extra_selections, *([self.selection] if self.selection else [])])
        if self.exclude is not None:
            new.exclude = list(self.exclude)
        new.extend_exclude = [*config.extend_exclude, *self.extend_exclude]
        pfi = dict(config.per_file_ignores if self.per_file_ignores is None else self.per_file_ignores)
        for pattern, codes in self.extend_per_file_ignores.items():
            pfi[pattern] = [*pfi.get(pattern, []), *codes]
        new.per_file_ignores = pfi
        for name in ("unsafe_fixes", "force_exclude", "respect_gitignore", "cache_dir"):
            if getattr(self, name) is not None:
                setattr(new, name, getattr(self, name))
        return new


_CONFIG_FIELDS = tuple(f.name for f in fields(Config))


@dataclass
class Hierarchy(Config):
    """Config whose per-path answers come from each path's nearest configuration."""

    overrides: Overrides = field(default_factory=Overrides)
    # directory -> its nearest pyproject.toml with our table (None: none); pyproject -> Config
    _nearest: dict = field(default_factory=dict, repr=False, compare=False)
    _loaded: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def create(cls, overrides: Overrides | None = None, here: str | None = None) -> Hierarchy:
        """``here``: the directory whose settings are the Hierarchy's own values (default: the
        working directory), for what is asked without a path (a report's fix hint)."""
        made = cls(overrides=overrides or Overrides())
        own = made.for_path(here or os.getcwd())
        for name in _CONFIG_FIELDS:
            setattr(made, name, getattr(own, name))
        return made

    def for_path(self, path: str) -> Config:
        if path == "-":
            return self.for_directory(os.getcwd())
        absolute = os.path.abspath(path)
        directory = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
            directory = os.path.dirname(directory)  # a path that does not exist (yet): its nearest existing directory
        return self.for_directory(directory)

    def for_entry(self, path: str) -> Config:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def for_directory(self, directory: str) -> Config:
        pyproject = self._nearest_pyproject(directory)
        config = self._loaded.get(pyproject)
        if config is None:
            config = self._loaded[pyproject] = _checked(self.overrides.apply(load_config(pyproject)))
        return config

    def _nearest_pyproject(self, directory: str) -> Path | None:
        """As config.find_pyproject (symlinks resolved), remembered for every directory on
        the way: a walk asks for each of its directories."""
        if directory in self._nearest:
            return self._nearest[directory]
        visited = []
        current = os.path.realpath(directory)
        found: Path | None = None
        while True:
            if current in self._nearest:
                found = self._nearest[current]
                break
            visited.append(current)
            candidate = os.path.join(current, "pyproject.toml")
            if os.path.isfile(candidate) and SECTION in _tool_table(candidate):
                found = Path(candidate)
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in (directory, *visited):
            self._nearest[seen] = found
        return found


def _tool_table(path: str) -> dict:
    tool = read_toml(Path(path)).get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _checked(config: Config) -> Config:
    """``config``, its selectors checked now (an unknown one is exit 2 before anything is
    linted, naming its file), whichever file first asks for it."""
    from torchsync_lint.catalog import rule_table

    rules = rule_table()
    config.enabled_codes(rules)
    from torchsync_lint.config import expand

    for selectors in config.per_file_ignores.values():
        expand(selectors, rules, config.source)
    return config


def settings_for(config_path: str | None = None, isolated: bool = False, overrides: Overrides | None = None, here: str | None = None) -> Config:
    """The settings of a run: one Config for every file under `--isolated` or `--config FILE`,
    else the Hierarchy (each file gets its own; ``here``: see Hierarchy.create)."""
    overrides = overrides or Overrides()
    if isolated:
        return _checked(overrides.apply(Config()))
    if config_path:
        return _checked(overrides.apply(load_config(Path(config_path))))
    return Hierarchy.create(overrides, here)


__all__ = ["ConfigError", "Hierarchy", "Overrides", "find_pyproject", "settings_for"]
