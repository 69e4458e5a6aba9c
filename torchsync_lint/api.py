"""The library API the CLI, the flake8 plugin, the fixer and the verifier share."""

from __future__ import annotations

import sys

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from torchsync_lint.config import Config, find_pyproject, load_config
from torchsync_lint.engine import lint_source
from torchsync_lint.errors import file_error
from torchsync_lint.files import ReadError, SourceFile, discover, read_source, read_stdin
from torchsync_lint.notebook import is_notebook, lint_notebook
from torchsync_lint.parallel import map_files
from torchsync_lint.rule import load_rules
from torchsync_lint.types import Finding


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)  # TSL90x: the file (or a rule) failed
    source: SourceFile | None = None

    @property
    def error(self) -> Finding | None:
        return self.errors[0] if self.errors else None


def config_for(paths: list[str], config_path: str | None = None, isolated: bool = False) -> Config:
    if isolated:
        return Config()
    if config_path:
        return load_config(Path(config_path))
    start = Path(paths[0]) if paths and paths[0] != "-" else Path.cwd()
    return load_config(find_pyproject(start if start.exists() else Path.cwd()))


def lint_text(text: str, path: str, config: Config | None = None) -> list[Finding]:
    return linter_for(path, config)(text)


def linter_for(path: str, config: Config | None = None) -> Callable[[str], list[Finding]]:
    """text -> findings for ``path`` under ``config``, with the rule selection for the path
    worked out once (the fixer lints the same path once per round)."""
    config = config or Config()
    codes, settings = config.codes_for_path(path, load_rules()), config.settings()
    return lambda text: lint_source(text, path, codes, settings)


def lint_file(path: str, config: Config | None = None, *, stdin_filename: str | None = None) -> FileResult:
    """Lint one file; ``-`` reads stdin, linted (and reported) as ``stdin_filename`` when
    given, so per-file settings apply to it as they do to the file itself."""
    config = config or Config()
    if is_notebook(stdin_filename if path == "-" else path):
        return lint_notebook(path, config, text=sys.stdin.read() if path == "-" else None, report_as=stdin_filename)
    reading, path = path, (stdin_filename or path) if path == "-" else path
    try:
        source = read_stdin() if reading == "-" else read_source(reading)
    except ReadError as exc:
        return FileResult(path, errors=[file_error(path, exc.code, exc.message)])
    findings = lint_text(source.text, path, config)
    errors = [f for f in findings if f.severity == "error"]
    return FileResult(path, [f for f in findings if f.severity != "error"], errors, source)


def lint_paths(paths: list[str], config: Config, jobs: int = 1) -> list[FileResult]:
    """Lint every file under ``paths``; ``jobs`` > 1 spreads many files over processes
    (``None``: one per core, see parallel.py). The results are in the same order either way."""
    files, bad = discover(paths, config)
    results = [FileResult(p, errors=[file_error(p, e.code, e.message)]) for p, e in bad]
    results += map_files(partial(lint_file, config=config), files, jobs)
    return results
