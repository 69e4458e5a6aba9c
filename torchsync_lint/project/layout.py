"""Where a project starts, where its imports resolve, and which module each file is.

The root is the nearest directory at or above the linted paths holding a pyproject.toml,
setup.cfg, setup.py or .git (else the paths' common directory). Imports resolve as Python
would for a script run from the root: first the importing file's own directory (a script's
`import utils`), then the source roots: the root itself, `src/` when it holds packages, and the
directories configured as ruff's `src = [...]` or our own `src = [...]`.

Nothing here parses Python; it reads directory entries and the root's pyproject.toml.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


def find_root(paths: list[str]) -> tuple[Path, bool]:
    """The project root for a run over ``paths`` (files or directories), and whether a project
    marker says so (without one, the project is just the files linted: nothing else is walked
    or written)."""
    existing = [Path(p).resolve() for p in paths if p != "-" and os.path.exists(p)] or [Path.cwd()]
    common = Path(os.path.commonpath([str(p if p.is_dir() else p.parent) for p in existing]))
    for directory in (common, *common.parents):
        if any((directory / marker).exists() for marker in _ROOT_MARKERS):
            return directory, True
    return common, False


class Layout:
    """Module names and files of one project."""

    def __init__(self, root: Path, extra_roots: list[str] | None = None) -> None:
        self.root = root.resolve()
        roots = [self.root]
        for name in [*(extra_roots or []), *_configured_roots(self.root)]:
            candidate = (self.root / name).resolve()
            if candidate.is_dir() and candidate not in roots:
                roots.append(candidate)
        src = self.root / "src"
        if src.is_dir() and src.resolve() not in roots and any((src / d / "__init__.py").is_file() for d in os.listdir(src)):
            roots.append(src.resolve())
        self.roots = roots

    def relpath(self, path: str | Path) -> str:
        """``path`` relative to the root, with `/` separators: the key of a project file."""
        return Path(os.path.relpath(Path(path).resolve(), self.root)).as_posix()

    def contains(self, path: str | Path) -> bool:
        rel = os.path.relpath(Path(path).resolve(), self.root)
        return not rel.startswith("..")

    def module_name(self, path: str | Path) -> str:
        """The dotted name ``path`` is imported as, from the deepest source root holding it."""
        resolved = Path(path).resolve()
        best = None
        for root in self.roots:
            rel = os.path.relpath(resolved, root)
            if not rel.startswith("..") and (best is None or len(rel) < len(best)):
                best = rel
        parts = list(Path(best or resolved.name).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def resolve(self, dotted: str, importer: str | Path) -> tuple[Path, str] | None:
        """The project file a dotted name lives in, and the rest of the name inside it:
        ``("src/proj/engine.py", "train_one_epoch")`` for `proj.engine.train_one_epoch`.

        Relative names (`.engine.f`, `..pkg.f`) resolve against the importer's package.
        None when no file of the project defines the module (a library, a missing module)."""
        importer_path = Path(importer).resolve()
        if dotted.startswith("."):
            level = len(dotted) - len(dotted.lstrip("."))
            base = importer_path.parent
            for _ in range(level - 1):
                base = base.parent
            return _longest_module(base, dotted.lstrip(".").split(".") if dotted.strip(".") else [])
        parts = dotted.split(".")
        for directory in (importer_path.parent, *self.roots):
            found = _longest_module(directory, parts)
            if found is not None and self.contains(found[0]):
                return found
        return None


def _longest_module(directory: Path, parts: list[str]) -> tuple[Path, str] | None:
    """The longest prefix of ``parts`` that is a module file under ``directory``."""
    for n in range(len(parts), 0, -1):
        found = _module_file(str(directory), tuple(parts[:n]))
        if found is not None:
            return found, ".".join(parts[n:])
    if not parts:
        init = directory / "__init__.py"
        return (init, "") if init.is_file() else None
    return None


@lru_cache(maxsize=4096)
def _module_file(directory: str, parts: tuple[str, ...]) -> Path | None:
    base = Path(directory).joinpath(*parts)
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


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
