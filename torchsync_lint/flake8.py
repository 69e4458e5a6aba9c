"""flake8 plugin (`flake8 --select TSL`): a thin adapter over the engine.

Choices (README, "flake8"):

* **Selection is flake8's.** Every rule runs; flake8's `select`/`extend-select`/`ignore`/
  `per-file-ignores` decide what is shown. Rules that are off by default
  (`default_enabled = False`) go through `extend_default_ignore`, so they stay hidden until
  selected, as in a plain `torchsync-lint` run.
* **`# noqa` is flake8's.** The engine is called with ``noqa=False`` so that flake8 applies
  `# noqa` itself (and `--disable-noqa` works, and noqa checkers see every finding). flake8
  reads `# noqa` on the reported physical line only, where our CLI accepts it on any line of
  the statement.
  `# torchsync: ignore[...]` is ours and flake8 does not know it, so the engine still honours
  it: the same comment hides a finding under both entry points.
* **Config:** of `[tool.torchsync-lint]` only `torchmetrics-version` (a fact about the target,
  needed by TSL203) is read, from the nearest pyproject.toml at or above the working directory
  (not under `--isolated`); the flake8 option `--torchmetrics-version` (or
  `torchmetrics-version =` in flake8's config) overrides it.
* **Columns:** ours are 1-based, flake8 adds 1 to what a plugin yields, so we yield col - 1
  and flake8 prints the column our CLI prints.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from torchsync_lint import __version__
from torchsync_lint.engine import lint_source
from torchsync_lint.rule import load_rules


def off_by_default() -> list[str]:
    return [code for code, rule in load_rules().items() if not rule.default_enabled]


def _config_torchmetrics_version() -> str | None:
    from torchsync_lint.config import ConfigError, find_pyproject, load_config

    try:
        return load_config(find_pyproject(Path.cwd())).torchmetrics_version
    except ConfigError:
        return None  # our CLI reports a broken config; flake8 should still lint


class Plugin:
    name = "torchsync-lint"
    version = __version__
    settings: ClassVar[dict[str, Any]] = {}

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
        version = getattr(options, "torchmetrics_version", None)
        if version is None and not getattr(options, "isolated", False):
            version = _config_torchmetrics_version()
        cls.settings = {"torchmetrics-version": version}

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        codes = set(load_rules())  # all of them: flake8 filters by its own select/ignore
        for f in lint_source(source, self.filename, codes, dict(self.settings), noqa=False):
            yield f.line, f.column - 1, f"{f.code} {f.message}", type(self)
