"""The sessions of one run (project/session.py): each file is linted in the session of its own
project root, so a monorepo's sub-projects never see each other's modules, whichever files
a run names together; files under no project marker share one session."""

from __future__ import annotations

import os
from pathlib import Path

from torchsync_lint.config import Config
from torchsync_lint.project.layout import clear_marker_memo, project_root
from torchsync_lint.project.session import Session
from torchsync_lint.types import FileResult


class Sessions:
    """``by_root``: a session per project root; ``loose``: the files under no marker."""

    def __init__(self, config: Config | None = None, *, use_cache: bool = True) -> None:
        self.config = config or Config()
        self.use_cache = use_cache
        self.by_root: dict[Path, Session] = {}
        self.loose: Session | None = None

    @classmethod
    def for_files(cls, files: list[str], config: Config | None = None, *, use_cache: bool = True) -> Sessions:
        clear_marker_memo()  # a run sees the project markers as they are now
        run = cls(config, use_cache=use_cache)
        grouped: dict[Path, list[str]] = {}
        loose = []
        for path in files:
            if path == "-":
                continue
            root, marked = project_root(path)
            (grouped.setdefault(root, []) if marked else loose).append(path)
        for root, named in grouped.items():
            run.by_root[root] = Session(root, run.config, use_cache=use_cache, files=named)
        if loose:
            common = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in loose])
            run.loose = Session(common, run.config, marked=False, use_cache=False, files=loose)
        return run

    def session_for(self, path: str) -> Session:
        """``path``'s session (one is made for its project when the run has none yet)."""
        root, marked = project_root(path)
        if marked:
            if root not in self.by_root:
                self.by_root[root] = new_session(path, self.config, use_cache=self.use_cache)
            return self.by_root[root]
        loose = self.loose
        if loose is not None and loose.layout.contains(path) and loose.layout.relpath(path) in loose.modules():
            return loose
        return new_session(path, self.config, use_cache=self.use_cache)

    def prepare(self, jobs: int | None) -> None:
        for root in sorted(self.by_root):
            self.by_root[root].prepare(jobs)
        if self.loose is not None:
            self.loose.prepare(jobs)

    def lint(self, path: str, **kwargs) -> FileResult:
        return self.session_for(path).lint(path, **kwargs)

    def close(self) -> None:
        """Free what the sessions kept for the run's lint (Session.close)."""
        for session in [*self.by_root.values(), *([self.loose] if self.loose is not None else [])]:
            session.close()


def new_session(path: str, config: Config, *, use_cache: bool) -> Session:
    """A Session for linting ``path`` as `check <path>` does: of its project when a marker
    says where that is, else of the file alone (its directory's, nothing cached)."""
    root, marked = project_root(path)
    if marked:
        return Session(root, config, use_cache=use_cache, files=[path])
    return Session(os.path.dirname(os.path.abspath(path)), config, marked=False, use_cache=False, files=[path])
