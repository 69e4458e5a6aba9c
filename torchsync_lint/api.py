"""The library API the CLI, the flake8 plugin, the fixer and the verifier share."""

from __future__ import annotations

import sys

from collections.abc import Callable
from functools import partial
from pathlib import Path

from torchsync_lint.config import Config, find_pyproject, load_config
from torchsync_lint.errors import file_error
from torchsync_lint.files import ReadError, discover, read_source, read_stdin
from torchsync_lint.notebook import is_notebook, load as load_notebook
from torchsync_lint.parallel import map_files, relaxed_gc
from torchsync_lint.catalog import rule_table
from torchsync_lint.types import FileResult, Finding


def config_for(paths: list[str], config_path: str | None = None, isolated: bool = False) -> Config:
    if isolated:
        return Config()
    if config_path:
        return load_config(Path(config_path))
    start = Path(paths[0]) if paths and paths[0] != "-" else Path.cwd()
    return load_config(find_pyproject(start if start.exists() else Path.cwd()))


def lint_text(text: str, path: str, config: Config | None = None) -> list[Finding]:
    return linter_for(path, config)(text)


def lint_notebook(path: str, config, *, text: str | None = None, report_as: str | None = None) -> FileResult:
    """lint_file for a notebook: findings at their cells (``Finding.cell``)."""
    shown = report_as or path
    try:
        nb = load_notebook(path, text)
    except ReadError as exc:
        return FileResult(shown, errors=[file_error(shown, exc.code, exc.message)])
    if not nb.is_python or not nb.cells:
        return FileResult(shown, source=nb.source_file())
    findings = [nb.to_cells(f) for f in lint_text(nb.python, shown, config)]
    errors = [f for f in findings if f.severity == "error"]
    if any(e.code == "TSL900" for e in errors):
        precise = nb.syntax_error(shown)
        if precise is not None:
            errors = [precise if e.code == "TSL900" else e for e in errors]
    return FileResult(shown, [f for f in findings if f.severity != "error"], errors, nb.source_file())


def linter_for(path: str, config: Config | None = None, session=None) -> Callable[[str], list[Finding]]:
    """text -> findings for ``path`` under ``config``, with the rule selection for the path
    worked out once (the fixer lints the same path once per round). With a project ``session``
    the file is linted with what the rest of the project says about it."""
    config = config or Config()
    codes, settings = config.codes_for_path(path, rule_table()), config.settings()
    env = session.env_for(path) if session is not None else None
    from torchsync_lint.engine import lint_source  # here: a run served by the cache never loads libcst

    return lambda text: lint_source(text, path, codes, settings, env=env)


def lint_file(path: str, config: Config | None = None, *, stdin_filename: str | None = None, session=None) -> FileResult:
    """Lint one file; ``-`` reads stdin, linted (and reported) as ``stdin_filename`` when
    given, so per-file settings apply to it as they do to the file itself. ``session``: the
    project view and the cache of this run (see project/session.py)."""
    config = config or Config()
    session = session if session is not None else _WORKER_SESSION
    if is_notebook(stdin_filename if path == "-" else path):
        return lint_notebook(path, config, text=sys.stdin.read() if path == "-" else None, report_as=stdin_filename)
    reading, path = path, (stdin_filename or path) if path == "-" else path
    try:
        source = read_stdin() if reading == "-" else read_source(reading)
    except ReadError as exc:
        return FileResult(path, errors=[file_error(path, exc.code, exc.message)])
    codes, settings = config.codes_for_path(path, rule_table()), config.settings()
    cache_key = _result_key(session, path, source.text, codes, settings) if reading != "-" else None
    findings = _cached_findings(session, cache_key)
    if findings is None:
        from torchsync_lint.engine import lint_source  # here: a run served by the cache never loads libcst

        env = session.env_for(path) if session is not None else None
        prepared = session.analyses.pop(session.layout.relpath(path), None) if session is not None and session.layout.contains(path) else None
        findings = lint_source(source.text, path, codes, settings, env=env, prepared=prepared)
        if cache_key is not None:
            session.cache.put("results", cache_key, [f.to_dict() for f in findings])
    errors = [f for f in findings if f.severity == "error"]
    return FileResult(path, [f for f in findings if f.severity != "error"], errors, source)


def lint_paths(paths: list[str], config: Config, jobs: int = 1, *, use_cache: bool = True) -> list[FileResult]:
    """Lint every file under ``paths`` as parts of their project; ``jobs`` > 1 spreads many
    files over processes (``None``: one per core, see parallel.py). The results are in the
    same order either way."""
    files, bad = discover(paths, config)
    results = [FileResult(p, errors=[file_error(p, e.code, e.message)]) for p, e in bad]
    session = project_session(paths, files, config, use_cache=use_cache)
    if session is not None:
        with relaxed_gc():  # summarising parses and analyses modules, as linting does
            session.prepare(jobs)
    results += map_files(partial(lint_file, config=config), files, jobs, initializer=_set_worker_session, initargs=(session,))
    _set_worker_session(None)
    return results


def project_session(paths: list[str], files: list[str], config: Config, *, use_cache: bool = True):
    """The project view for linting ``files`` (found under ``paths``), or None without one."""
    from torchsync_lint.project.session import Session

    python = [f for f in files if f.endswith((".py", ".pyi"))]
    if not python:
        return None
    return Session.for_paths(paths or ["."], python, use_cache=use_cache, config_digest=_config_digest(config), walk=lambda root: discover([root], config)[0])


def _config_digest(config: Config) -> str:
    return repr(sorted(config.settings().items()))


def _result_key(session, path: str, text: str, codes: set[str], settings: dict) -> str | None:
    if session is None or not session.cache.enabled:
        return None
    from torchsync_lint.installed import installed_torchmetrics_version
    from torchsync_lint.project.cache import digest

    deps = session.dependencies(session.layout.relpath(path)) if session.layout.contains(path) else ""
    return digest("results", path, text, sorted(codes), sorted(settings.items()), installed_torchmetrics_version(), deps)


def _cached_findings(session, key: str | None) -> list[Finding] | None:
    if key is None:
        return None
    cached = session.cache.get("results", key)
    if not isinstance(cached, list):
        return None
    try:
        return [Finding.from_dict(d) for d in cached]
    except (KeyError, TypeError, ValueError):
        return None


_WORKER_SESSION = None  # the session of the run this process (or worker) lints files for


def _set_worker_session(session) -> None:
    global _WORKER_SESSION
    _WORKER_SESSION = session
