"""The library API the CLI, the flake8 plugin, the fixer and the verifier share.

Every file is linted through the project session of its own project (project/session.py):
the same root, the same modules, the same summaries and cache whichever entry point asks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import closing
from typing import TypeVar
from functools import partial

from torchsync_lint import sources
from torchsync_lint.catalog import rule_table
from torchsync_lint.config import Config
from torchsync_lint.errors import file_error
from torchsync_lint.files import ReadError, discover, read_stdin_bytes
from torchsync_lint.parallel import map_files, relaxed_gc
from torchsync_lint.project.sessions import Sessions
from torchsync_lint.types import FileResult, Finding

T = TypeVar("T")

__all__ = ["FileResult", "config_for", "lint_file", "lint_paths", "lint_text", "lint_with_callers", "linter_for", "map_in_sessions", "session_for"]


def config_for(paths: list[str], config_path: str | None = None, isolated: bool = False, overrides=None) -> Config:
    """The settings `check` uses: each file gets those of its nearest configuration, in any
    order (settings.py); ``paths[0]`` only says whose settings answer what is asked without
    a path."""
    from torchsync_lint.settings import settings_for

    here = paths[0] if paths and paths[0] != "-" else None
    return settings_for(config_path, isolated, overrides, here=here)


def lint_text(text: str, path: str, config: Config | None = None) -> list[Finding]:
    """``text`` linted as one module at ``path`` on its own, without a project (the engine's
    answer for a snippet; files are linted with lint_file)."""
    return linter_for(path, config)(text)


def linter_for(path: str, config: Config | None = None) -> Callable[[str], list[Finding]]:
    """text -> findings of one module at ``path`` on its own, the rule selection for the path
    worked out once (a project's files: Session.editing)."""
    config = config or Config()
    codes, settings = config.codes_for_path(path, rule_table()), config.for_path(path).settings()

    def lint(text: str) -> list[Finding]:
        from torchsync_lint.engine import lint_source  # here: a run served by the cache never loads libcst

        return lint_source(text, path, codes, settings)

    return lint


def lint_file(path: str, config: Config | None = None, *, stdin_filename: str | None = None, use_cache: bool = True) -> FileResult:
    """Lint one file as a part of its project. ``-`` reads stdin, linted (and reported) as
    ``stdin_filename`` when given: in that file's project, its text replacing the file's, with
    its per-file settings. The file is linted in the run's Sessions (set_run_sessions) when a
    run is under way in this process, else in one made for it."""
    config = config or Config()
    if path == "-":
        return _lint_stdin(config, stdin_filename, use_cache)
    if _RUN_SESSIONS is not None:
        return _RUN_SESSIONS.lint(path)
    with closing(Sessions.for_files([path], config, use_cache=use_cache)) as run:  # (its parsed modules freed on return: Session.close)
        return run.lint(path)


def _lint_stdin(config: Config, stdin_filename: str | None, use_cache: bool) -> FileResult:
    shown = stdin_filename or "-"
    try:
        data = read_stdin_bytes()
        if stdin_filename is not None:
            with closing(Sessions.for_files([stdin_filename], config, use_cache=use_cache)) as run:
                return run.lint(stdin_filename, text=data)
        source = sources.read("-", data)
    except ReadError as exc:
        return FileResult(shown, errors=[file_error(shown, exc.code, exc.message)])
    findings = lint_text(source.python, shown, config)
    return FileResult.of(shown, findings, source.file)


def lint_paths(paths: list[str], config: Config, jobs: int = 1, *, use_cache: bool = True, progress=None) -> list[FileResult]:
    """Lint every file under ``paths`` as parts of their projects; ``jobs`` > 1 spreads many
    files over processes (``None``: one per core, see parallel.py). The results are in the
    same order either way. ``progress(done, total)``: see parallel.map_files."""
    files, bad = discover(paths, config)
    results = [FileResult(p, errors=[file_error(p, e.code, e.message)]) for p, e in bad]
    return results + map_in_sessions(partial(lint_file, config=config), files, config, jobs, use_cache=use_cache, progress=progress)


def map_in_sessions(work: Callable[[str], T], files: list[str], config: Config, jobs: int | None, *, use_cache: bool = True, progress=None) -> list[T]:
    """``work(path)`` for each file (in ``jobs`` processes, see parallel.py), with the run's
    Sessions installed (set_run_sessions) while it runs: ``work`` lints each file in its
    project session. The sessions are uninstalled whatever happens (an exception, a
    KeyboardInterrupt): the work runs in this process when there is one job, and a later
    lint must not read this run's texts."""
    with closing(Sessions.for_files(files, config, use_cache=use_cache)) as run:
        if progress is not None:
            progress(0, len(files))  # before the project is summarised: the line shows at once
        with relaxed_gc():  # summarising parses and analyses modules, as linting does
            run.prepare(jobs)
        try:
            return map_files(work, files, jobs, initializer=set_run_sessions, initargs=(run,), progress=progress)
        finally:
            set_run_sessions(None)


def lint_with_callers(path: str, config: Config | None = None) -> tuple[FileResult, list[tuple[Finding, list[int]]]]:
    """``path``'s own findings, and the findings of the other modules of its project that
    ``path`` reaches, each with the lines of ``path`` on a call chain to it (the verifier
    attributes a runtime sync to the innermost line of the script it runs). ``config``: by
    default the project's, as `check` would load it for ``path``."""
    config = config or config_for([path])
    with closing(Sessions.for_files([path], config).session_for(path)) as session:
        result = session.lint(path)
        own = session.layout.relpath(path) if session.layout.contains(path) else None
        reached = []
        if own is not None:
            for rel in sorted(session.dependents(path) - {own}):
                other = session.lint(str(session.root / rel), report_as=os.path.relpath(session.root / rel))
                for finding in other.findings:
                    lines = session.call_lines(rel, finding.line, own)
                    if lines:
                        reached.append((finding, lines))
        return result, reached


def session_for(path: str, config: Config | None = None, *, use_cache: bool = True):
    """``path``'s project session: the run's (set_run_sessions), else one made for it."""
    run = _RUN_SESSIONS if _RUN_SESSIONS is not None else Sessions.for_files([path], config, use_cache=use_cache)
    return run.session_for(path)


_RUN_SESSIONS = None  # the sessions of the run this process (or worker) lints files for


def set_run_sessions(run) -> None:
    """Install the run's Sessions for lint_file in this process (a worker's initializer)."""
    global _RUN_SESSIONS
    _RUN_SESSIONS = run
