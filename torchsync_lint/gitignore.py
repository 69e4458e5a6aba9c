"""Which files git (and ripgrep/ruff) would ignore: `.gitignore`, `.ignore`,
`.git/info/exclude` and the global excludes file, with the standard library only.

Matching follows gitignore(5): blank lines and `#` comments are skipped, `!` re-includes, a
trailing `/` matches directories only, a pattern with a `/` before its end is anchored to the
directory of its file while one without matches a name at any depth, `*` and `?` never match
`/`, `**/` is any number of directories, a trailing `/**` everything inside. The last
matching pattern wins; files deeper in the tree and `.ignore` (over `.gitignore`) come later,
so they win. As in git, a file below an ignored directory cannot be re-included: the walk
never enters the directory.

As ruff does (the `ignore` crate's defaults), `.gitignore`, `.git/info/exclude` and the
global file count only inside a git repository (a `.git` at or above the walked directory);
`.ignore` counts everywhere. Why not `pathspec`: it would be the lint path's second
dependency for about 150 lines of well-specified matching.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

IGNORE_FILES = (".gitignore", ".ignore")  # in rising precedence within one directory


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


@dataclass(frozen=True)
class IgnoreFile:
    base: str  # absolute directory the patterns are relative to
    patterns: tuple[Pattern, ...]


def parse(text: str) -> tuple[Pattern, ...]:
    patterns = []
    for raw in text.splitlines():
        line = _strip_trailing_spaces(raw)
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = body if anchored else f"(?:.*/)?{body}"
        patterns.append(Pattern(re.compile(regex + r"\Z", re.DOTALL), negated, dir_only))
    return tuple(patterns)


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped[:-1] + " "  # `\ ` keeps one escaped space
    return stripped


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and (i + 2 == n or pattern[i + 2] == "/"):
            if i + 2 == n:
                out.append(".*")  # `dir/**`: everything inside
                i += 2
            else:
                out.append("(?:.*/)?")  # `**/`: zero or more directories
                i += 3
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = (body[1:] if negate else body).replace("\\", "\\\\")
            out.append("(?!/)[" + ("^" if negate else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def _read(path: str) -> tuple[Pattern, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return parse(fh.read())
    except OSError:
        return ()


def load(path: str, base: str) -> IgnoreFile | None:
    patterns = _read(path) if os.path.isfile(path) else ()
    return IgnoreFile(base, patterns) if patterns else None


@dataclass(frozen=True)
class Matcher:
    """The ignore files in force for the entries of one directory, lowest precedence first."""

    files: tuple[IgnoreFile, ...] = ()
    repo: str | None = None  # the repository root: `.gitignore` counts only inside one

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Is the absolute ``path`` ignored? The last matching pattern decides."""
        decision = False
        for ignore_file in self.files:
            rel = os.path.relpath(path, ignore_file.base).replace(os.sep, "/")
            if rel.startswith(".."):
                continue
            for pattern in ignore_file.patterns:
                if (is_dir or not pattern.dir_only) and pattern.regex.match(rel):
                    decision = not pattern.negated
        return decision

    def descend(self, directory: str) -> Matcher:
        """The matcher for the entries of the absolute ``directory``: adds its ignore files."""
        in_repo = self.repo is not None and (directory == self.repo or directory.startswith(self.repo.rstrip(os.sep) + os.sep))
        names = IGNORE_FILES if in_repo else (".ignore",)
        added = tuple(f for f in (load(os.path.join(directory, name), directory) for name in names) if f is not None)
        return Matcher(self.files + added, self.repo) if added else self


def matcher_for_walk(start: str) -> Matcher:
    """The matcher for the entries of the directory ``start``: the global excludes file, the
    repository's info/exclude, and the ignore files of ``start`` and of every directory above
    it (`.gitignore` up to the repository root only)."""
    start = os.path.abspath(start)
    repo = _repository_root(start)
    files: list[IgnoreFile] = []
    if repo is not None:
        for path in (_global_excludes_file(), _info_exclude(repo)):
            found = load(path, repo) if path else None
            if found is not None:
                files.append(found)
    matcher = Matcher(tuple(files), repo)
    for directory in reversed([start, *map(str, Path(start).parents)]):  # outermost first
        matcher = matcher.descend(directory)
    return matcher


def _repository_root(start: str) -> str | None:
    for directory in (start, *map(str, Path(start).parents)):
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
    return None


def _info_exclude(repo: str) -> str | None:
    git = os.path.join(repo, ".git")
    if os.path.isfile(git):  # a worktree or submodule: `gitdir: <path>`
        try:
            with open(git, encoding="utf-8") as fh:
                line = fh.readline().strip()
        except OSError:
            return None
        if not line.startswith("gitdir:"):
            return None
        git = os.path.join(repo, line.split(":", 1)[1].strip())
        commondir = os.path.join(git, "commondir")
        if os.path.isfile(commondir):
            try:
                with open(commondir, encoding="utf-8") as fh:
                    git = os.path.join(git, fh.readline().strip())
            except OSError:
                return None
    return os.path.join(git, "info", "exclude")


def _global_excludes_file() -> str | None:
    """`core.excludesFile` from the user's git config, else git's default location."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    configured = None
    for config in (os.path.join(xdg, "git", "config"), os.path.join(os.path.expanduser("~"), ".gitconfig")):
        value = _read_excludes_file_setting(config)
        if value:
            configured = value  # ~/.gitconfig is read after the XDG file, so it wins, as in git
    if configured:
        return os.path.expanduser(configured)
    return os.path.join(xdg, "git", "ignore")


def _read_excludes_file_setting(config: str) -> str | None:
    try:
        with open(config, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    section, value = "", None
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
            continue
        if section == "core" and "=" in line:
            key, _, val = line.partition("=")
            if key.strip().lower() == "excludesfile":
                value = val.split("#", 1)[0].split(";", 1)[0].strip().strip('"')
    return value
