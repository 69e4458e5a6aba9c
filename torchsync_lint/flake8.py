"""flake8 plugin (`flake8 --select TSL`): a thin adapter over the project pipeline.

Choices (README, "flake8"):

* **The project view is check's.** Each file is linted in its project session
  (project/session.py), as `torchsync-lint check` lints it: a finding that needs another module
  is reported at the same line and column. The sessions live for the flake8 run (one per
  project root); a file outside any project is linted alone.

* **Selection is flake8's, narrowed by ours.** flake8's `select`/`extend-select`/`ignore`/
  `per-file-ignores` decide what can be shown. Rules that are off by default
  (`default_enabled = False`) go through `extend_default_ignore`, so they stay hidden until
  selected, as in a plain `torchsync-lint` run. The file's own [tool.torchsync-lint]
  `select`/`extend-select`/`ignore`/`per-file-ignores` then apply to what flake8 selected,
  resolved as `check` resolves them (selection.py): a rule the project turns off stays off
  under flake8 too.
* **`# noqa` is flake8's.** The engine is called with ``noqa=False`` so that flake8 applies
  `# noqa` itself (and `--disable-noqa` works, and noqa checkers see every finding). flake8
  reads `# noqa` on the reported physical line only, where our CLI accepts it on any line of
  the statement.
  `# torchsync: ignore[...]` is ours and flake8 does not know it, so the engine still honours
  it: the same comment hides a finding under both entry points.
* **Config:** each file's settings are those `check` gives it: its nearest configuration
  (settings.py; none under `--isolated`): the rule selection above, the excludes that decide
  the project's modules and `torchmetrics-version` (TSL203), which the flake8 option
  `--torchmetrics-version` (or `torchmetrics-version =` in flake8's config) overrides.
* **Columns:** ours are 1-based, flake8 adds 1 to what a plugin yields, so we yield col - 1
  and flake8 prints the column our CLI prints.
* **Cost:** flake8 imports every installed plugin at start-up and builds it for every file,
  whatever `--select` says, then filters the results. So this module imports nothing heavy,
  `parse_options` works out which TSL codes flake8 would show (flake8's own `DecisionEngine`),
  and `run` returns at once when there are none: `flake8 --select E` costs what it costs
  without the plugin. When some are selected, only those rules run (benchmarks/README.md,
  "flake8 plugin").
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from torchsync_lint import __version__

# The rules with `default_enabled = False`, as data: flake8 calls `add_options` on every run,
# and reading them from the registry would import libcst and every rule (~0.2 s of CPU) even
# when no TSL code is selected. tests/test_flake8.py keeps this equal to the registry.
OFF_BY_DEFAULT: tuple[str, ...] = ()
PREFIX = "TSL"


def off_by_default() -> list[str]:
    codes = set(OFF_BY_DEFAULT)
    rule = sys.modules.get("torchsync_lint.rule")
    if rule is not None:  # rules already registered in this process (an embedding tool's own)
        codes |= {code for code, r in rule.registry.items() if not r.default_enabled}
    return sorted(codes)


def _may_select_prefix(options) -> bool:
    """Cheap pre-check, no rule loaded: could flake8's selection include any TSL code?

    flake8 (DecisionEngine) selects `select + extend-select` when `select` is given, else its
    extended default select (every plugin's entry-point prefix) + `extend-select`; a code is
    selected when it starts with one of them. None of those overlapping `TSL` means no TSL
    code can be shown, whatever the ignore lists say.
    """
    try:
        select = options.select
        chosen = [*(select if select is not None else options.extended_default_select), *(options.extend_select or ())]
    except AttributeError:
        return True  # a flake8 we do not know: assume selected and let it filter
    return any(PREFIX.startswith(s) or s.startswith(PREFIX) for s in chosen)


def selected_codes(options) -> frozenset[str]:
    """The TSL codes flake8 would show under ``options``; empty when none can be."""
    if not _may_select_prefix(options):
        return frozenset()
    from torchsync_lint.rule import load_rules

    codes = load_rules()
    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
        return frozenset(c for c in codes if engine.decision_for(c) is Decision.Selected)
    except Exception:  # noqa: BLE001 - flake8 internals moved: run every rule, flake8 filters
        return frozenset(codes)


def _config_for(path: str, isolated: bool):
    """The settings `check` would give ``path`` (the defaults under flake8's --isolated, or
    when the configuration is broken: our CLI reports that; flake8 should still lint)."""
    from torchsync_lint.config import Config, ConfigError

    if isolated:
        return Config()
    hierarchy = _HIERARCHY.get("run")
    try:
        if hierarchy is None:
            from torchsync_lint.settings import Hierarchy

            # (not Hierarchy.create: the working directory's settings are not needed, and a
            # broken one there must not take every other file's away)
            hierarchy = _HIERARCHY["run"] = Hierarchy()
        return hierarchy.for_path(path)
    except ConfigError:
        return Config()


_HIERARCHY: dict = {}  # the run's settings.Hierarchy, made on first use (parse_options drops it)


class Plugin:
    name = "torchsync-lint"
    version = __version__
    settings: ClassVar[dict[str, Any]] = {}  # the working directory's (files: their own, _settings)
    option_version: ClassVar[str | None] = None  # flake8's --torchmetrics-version
    # The codes to run, from flake8's selection (None until parse_options: every rule).
    codes: ClassVar[frozenset[str] | None] = None
    isolated: ClassVar[bool] = False  # flake8 --isolated: no [tool.torchsync-lint] either

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # flake8 needs a `tree` parameter to treat us as an AST plugin; libcst parses `lines`.
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--torchmetrics-version",
            parse_from_config=True,
            default=None,
            help="torchmetrics release the code targets (TSL203); default: "
            "[tool.torchsync-lint] torchmetrics-version, else the installed torchmetrics",
        )
        option_manager.extend_default_ignore(off_by_default())

    @classmethod
    def parse_options(cls, options) -> None:
        """Once per flake8 run: its selection and settings; the sessions of an earlier run in
        this process are dropped (the project may have changed since)."""
        _SESSIONS.clear()
        _HIERARCHY.clear()
        cls.codes = selected_codes(options)
        if not cls.codes:
            return  # nothing to run: no config to read either
        cls.isolated = bool(getattr(options, "isolated", False))
        cls.option_version = getattr(options, "torchmetrics_version", None)
        cls.settings = _settings(_config_for(".", cls.isolated), cls.option_version)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if self.codes is not None and not self.codes:
            return  # no TSL code selected: flake8 would drop whatever we found
        from torchsync_lint.rule import load_rules

        rules = load_rules()
        flake8_codes = set(rules if self.codes is None else self.codes)
        stdin = self.filename in ("stdin", "-") or not Path(self.filename).is_file()
        config = _config_for("-" if stdin else self.filename, self.isolated)
        codes = self._narrowed(config, flake8_codes, rules)
        if not codes:
            return
        source = "".join(self.lines)
        settings = _settings(config, self.option_version)
        if stdin:
            from torchsync_lint.engine import lint_source  # no file: the module alone

            found = lint_source(source, self.filename, codes, settings, noqa=False)
        else:
            result = _session_for(self.filename, config, settings).lint(self.filename, text=source, codes=codes, noqa=False)
            found = [*result.findings, *result.errors]
        for f in sorted(found, key=lambda f: f.sort_key):
            yield f.line, f.column - 1, f"{f.code} {f.message}", type(self)

    def _narrowed(self, config, flake8_codes: set[str], rules) -> set[str]:
        """What flake8 selected, under the file's own rule selection (resolved from flake8's
        choice as `check` resolves it from the defaults)."""
        from torchsync_lint.config import ConfigError

        try:
            return config.codes_for_path("-" if self.filename in ("stdin", "-") else self.filename, rules, default=flake8_codes) & flake8_codes
        except ConfigError:
            return flake8_codes  # an unknown selector: our CLI reports it


def _settings(config, option_version: str | None) -> dict[str, Any]:
    return {"torchmetrics-version": option_version if option_version is not None else config.torchmetrics_version}


# The project sessions of this flake8 run (flake8 hands a plugin one file at a time, in
# several processes): one per project root, built on its first file and kept for the others;
# cleared when a new run starts (Plugin.parse_options).
_SESSIONS: dict[tuple, Any] = {}


def _session_for(filename: str, config, settings: dict):
    """``filename``'s project session, with the configuration `torchsync-lint check` gives
    its files (``config``: every file of one project has the same; its excludes decide the
    project's modules) and flake8's settings over it."""
    from dataclasses import replace

    from torchsync_lint.project.layout import project_root
    from torchsync_lint.project.sessions import Sessions

    root, marked = project_root(filename)
    key = (str(root), marked, str(config.source), tuple(sorted(settings.items())))
    run = _SESSIONS.get(key)
    if run is None:
        fixed = replace(config, **{name.replace("-", "_"): value for name, value in settings.items()})
        run = _SESSIONS[key] = Sessions(fixed)
    return run.session_for(filename)
