"""Where a project starts, where its imports resolve, and which module each file is.

A file's project root is the nearest directory at or above it holding a pyproject.toml,
setup.cfg, setup.py (unless the directory is a package: an extension built in place) or .git,
so in a monorepo (one .git, a pyproject.toml per sub-project)
each file belongs to its own sub-project whatever else is linted with it; a directory that
holds its own marker is another project, never part of the one above it.

Imports resolve as Python resolves them for a script run from the root, among the project's
own modules only (the files of its walk: nothing outside the root is ever read for it):

- first the importing file's own directory (a script's `import utils`), then the source
  roots: the root itself, `src/` when it holds packages, and the directories configured as
  ruff's `src = [...]` or our own `src = [...]`; then the directories above the importer, up
  to the root (where a script that imports its package may live: `gym/experiment.py` and
  `gym/decision_transformer/...` in a repository holding several programs);
- in one directory a package (`utils/__init__.py`) wins over a module of the same name
  (`utils.py`), as in Python's path finder;
- a relative import counts its dots from the importer's package (its dotted name under the
  source root that holds it); one that goes beyond the top-level package is unresolved
  (Python raises "attempted relative import beyond top-level package");
- paths are taken as they are named, symlinks unresolved: `utils.py -> ../shared/utils.py`
  is the project's module `utils.py`, as Python imports it through the link.

Nothing here parses Python; it reads directory entries and the root's pyproject.toml.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from torchsync_lint.project.sys_path import path_additions

_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
_MARKED: dict[str, bool] = {}  # directory -> holds a marker (a run asks for every directory of a walk)
_ROOTS: dict[str, tuple[Path, bool]] = {}  # absolute path -> project_root's answer (asked per file, twice)


def _is_marked(directory: str) -> bool:
    found = _MARKED.get(directory)
    if found is None:
        found = _MARKED[directory] = any(os.path.exists(os.path.join(directory, m)) for m in _ROOT_MARKERS if not (m == "setup.py" and _is_package(directory)))
    return found


def _is_package(directory: str) -> bool:
    """A package beside its own `setup.py` (`monotonic_align/` building a Cython extension in
    place) is imported by the project around it: the `setup.py` does not make it another one."""
    return os.path.exists(os.path.join(directory, "__init__.py"))


def project_root(path: str) -> tuple[Path, bool]:
    """The root of the project ``path`` (a file or a directory) belongs to, and whether a
    marker says so (without one: the file's own directory, and no project)."""
    start = os.path.abspath(path)
    found = _ROOTS.get(start)
    if found is None:
        found = _ROOTS[start] = _project_root(start)
    return found


def _project_root(start: str) -> tuple[Path, bool]:
    if not os.path.isdir(start):
        start = os.path.dirname(start)
    directory = start
    while True:
        if _is_marked(directory):
            return Path(directory), True
        parent = os.path.dirname(directory)
        if parent == directory:
            return Path(start), False
        directory = parent


def clear_marker_memo() -> None:
    """Forget which directories hold project markers (a long-lived process, after files moved)."""
    _MARKED.clear()
    _ROOTS.clear()


class Layout:
    """Module names and files of one project."""

    def __init__(self, root: Path, extra_roots: list[str] | None = None, modules: Iterable[str] = ()) -> None:
        self.root = Path(os.path.abspath(root))
        self._root = str(self.root)
        roots = [self._root]
        for name in [*(extra_roots or []), *_configured_roots(self.root)]:
            candidate = os.path.normpath(os.path.join(self._root, name))
            if os.path.isdir(candidate) and candidate not in roots and self.contains(candidate):
                roots.append(candidate)
        src = os.path.join(self._root, "src")
        if os.path.isdir(src) and src not in roots and any(os.path.isfile(os.path.join(src, d, "__init__.py")) for d in os.listdir(src)):
            roots.append(src)
        self.roots = [Path(r) for r in roots]
        self._roots = roots
        self.set_modules(modules)

    def set_modules(self, modules: Iterable[str]) -> None:
        """The project's own module files (paths relative to the root): what imports can resolve to."""
        self.modules = frozenset(modules)
        # Every directory and module name on the modules' paths: an absolute import name whose
        # first part is none of them names no project module (most names are torch's).
        self.path_names = frozenset(part.removesuffix(".py") for m in self.modules for part in m.split("/"))
        # Memos: a run resolves thousands of import names (most of them torch's) from a few
        # hundred files.
        self._resolved: dict[tuple[str, str], tuple[Path, str] | None] = {}
        self._files: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self._resolved_in: dict[tuple[str, str], tuple[Path, str] | None] = {}
        self._added: dict[str, list[str]] = {}  # importer -> the directories it adds to sys.path

    def _abs(self, path: str | Path) -> str:
        return os.path.abspath(path)

    def relpath(self, path: str | Path) -> str:
        """``path`` relative to the root, with `/` separators: the key of a project file."""
        full = self._abs(path)
        if full.startswith(self._root + os.sep):
            return full[len(self._root) + 1 :].replace(os.sep, "/")
        return Path(os.path.relpath(full, self._root)).as_posix()

    def contains(self, path: str | Path) -> bool:
        full = self._abs(path)
        return full == self._root or full.startswith(self._root + os.sep)

    def module_name(self, path: str | Path) -> str:
        """The dotted name ``path`` is imported as, from the deepest source root holding it."""
        return ".".join(self._module_parts(self._abs(path)))

    def _module_parts(self, full: str) -> list[str]:
        best = self._source_root_of(full)
        rel = full[len(best) + 1 :] if best is not None else os.path.basename(full)
        parts = list(Path(rel).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return parts

    def resolve(self, dotted: str, importer: str | Path) -> tuple[Path, str] | None:
        """The project file a dotted name lives in, and the rest of the name inside it:
        ``("src/proj/engine.py", "train_one_epoch")`` for `proj.engine.train_one_epoch`.

        Relative names (`.engine.f`, `..pkg.f`) resolve against the importer's package.
        None when no module of the project defines it (a library, a missing module, a
        relative import beyond the top-level package)."""
        head = dotted.partition(".")[0]
        if head and head not in self.path_names:
            return None
        full = self._abs(importer)
        key = (dotted, full if dotted.startswith(".") else os.path.dirname(full))
        if key not in self._resolved:
            self._resolved[key] = self._resolve(dotted, full)
        return self._resolved[key]

    def resolve_in(self, dotted: str, rel: str) -> tuple[Path, str] | None:
        """``resolve`` for an importer named by its path relative to the root (the view asks
        the same names of the same modules again for each file it lints)."""
        key = (dotted, rel)
        if key not in self._resolved_in:
            self._resolved_in[key] = self.resolve(dotted, os.path.join(self._root, rel))  # (a string path: resolve answers a library's name before reading it)
        return self._resolved_in[key]

    def _resolve(self, dotted: str, importer: str) -> tuple[Path, str] | None:
        if dotted.startswith("."):
            level = len(dotted) - len(dotted.lstrip("."))
            rest = [p for p in dotted.lstrip(".").split(".") if p]
            parts = self._module_parts(importer)
            package = parts if os.path.basename(importer) == "__init__.py" else parts[:-1]
            if level > len(package):
                return None  # beyond the top-level package (or a script's `from . import x`)
            base = package[: len(package) - (level - 1)]
            source_root = self._source_root_of(importer)
            return self._longest_module(source_root, base + rest, len(base)) if source_root is not None else None
        parts = dotted.split(".")
        best = None
        itself = Path(importer)
        for directory in (os.path.dirname(importer), *self._roots, *self._script_directories(importer)):
            found = self._longest_module(directory, parts, 1)
            # A module that names more of the dotted path wins: `decision_transformer.models.model`
            # from models/decision_transformer.py is the package two directories up, not the
            # importer's own neighbour `decision_transformer.py` (Python has no implicit
            # relative imports; a directory beside a package module is not on sys.path).
            if found is not None and found[0] != itself and (best is None or found[1].count(".") + (1 if found[1] else 0) < best[1].count(".") + (1 if best[1] else 0)):
                best = found
                if not found[1]:
                    break  # every part is a module: nothing names more
        if best is None:
            for directory in self._added_directories(importer):  # `sys.path.insert(0, ...lib)` first
                best = self._longest_module(directory, parts, 1)
                if best is not None:
                    break
        return best

    def _added_directories(self, importer: str) -> list[str]:
        """The project directories the importer puts on `sys.path` at its top level, itself or
        through a module of its own directory it imports first (`import _init_paths`)."""
        if importer not in self._added:
            found: list[str] = []
            added, imported = self._path_additions(importer)
            found += added
            for name in imported:
                sibling = os.path.join(os.path.dirname(importer), name + ".py")
                if self.contains(sibling) and os.path.isfile(sibling):
                    found += self._path_additions(sibling)[0]
            self._added[importer] = [d for d in dict.fromkeys(found) if os.path.isdir(d) and self.contains(d)]
        return self._added[importer]

    def _path_additions(self, path: str) -> tuple[list[str], list[str]]:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return [], []
        if "sys.path" not in text and "import " not in text:
            return [], []
        return path_additions(text, path)

    def _script_directories(self, importer: str) -> list[str]:
        """The directories between the importer and the root, nearest first: where the script
        that imports it may live (`gym/experiment.py` puts `gym/` on `sys.path`, so
        `gym/decision_transformer/training/seq_trainer.py`'s `import decision_transformer...`
        resolves there). Tried after the source roots."""
        out = []
        directory = os.path.dirname(os.path.dirname(importer))
        while self.contains(directory) and os.path.normpath(directory) not in self._roots and len(out) < 8:
            out.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        return out

    def _source_root_of(self, full: str) -> str | None:
        best = None
        for root in self._roots:
            if full.startswith(root + os.sep) and (best is None or len(root) > len(best)):
                best = root
        return best

    def _longest_module(self, directory: str, parts: list[str], shortest: int) -> tuple[Path, str] | None:
        """The longest prefix of ``parts`` (at least ``shortest`` long) that is a module of the
        project under ``directory``."""
        for n in range(len(parts), max(shortest, 1) - 1, -1):
            found = self._module_file(directory, tuple(parts[:n]))
            if found is not None:
                return Path(found), ".".join(parts[n:])
        return None

    def _module_file(self, directory: str, parts: tuple[str, ...]) -> str | None:
        key = (directory, parts)
        if key in self._files:
            return self._files[key]
        base = os.path.join(directory, *parts)
        found = None
        inside = self._root + os.sep
        for candidate in (os.path.join(base, "__init__.py"), base + ".py"):  # a package first, as Python
            # (``directory`` is absolute and normal, and ``parts`` are names: so is ``candidate``,
            # and it is a project file when its relative path is one of the modules)
            if candidate.startswith(inside) and candidate[len(inside) :].replace(os.sep, "/") in self.modules:
                found = candidate
                break
        self._files[key] = found
        return found


def _configured_roots(root: Path) -> list[str]:
    """`src = [...]` from [tool.torchsync-lint] or, as ruff users write it, [tool.ruff]."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    try:
        from torchsync_lint.config import ConfigError, read_toml

        tool = read_toml(pyproject).get("tool", {})
    except (ConfigError, OSError):
        return []  # reported by the config loader, not here
    found: list[str] = []
    for table in (tool.get("torchsync-lint", {}), tool.get("ruff", {})):
        src = table.get("src") if isinstance(table, dict) else None
        if isinstance(src, list):
            found += [s for s in src if isinstance(s, str)]
    return found
