"""Layout's two ways of resolving an import name (project/layout.py) give one answer: by the
importer's path (the import graph) and by its path relative to the root (the view, memoised
per file that asks); and its test of a candidate file by prefix gives what making the path
absolute and relative again gives."""

from __future__ import annotations

import os
from pathlib import Path

from torchsync_lint.project.graph import import_names
from torchsync_lint.project.layout import Layout

DATA = Path(__file__).parent / "data"


class _SlowLayout(Layout):
    """The reference: a candidate file made absolute and relative again before the test."""

    def _module_file(self, directory: str, parts: tuple[str, ...]) -> str | None:
        base = os.path.join(directory, *parts)
        for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
            if self.contains(candidate) and self.relpath(candidate) in self.modules:
                return candidate
        return None


def _projects() -> list[Path]:
    return [DATA / "objects_project", DATA / "split_project", *sorted(p for p in (DATA / "projects").iterdir() if p.is_dir())]


def test_resolving_from_a_relative_path_equals_resolving_from_the_file():
    checked = found = 0
    for root in _projects():
        modules = sorted(str(p.relative_to(root).as_posix()) for p in root.rglob("*.py"))
        by_path, by_rel = _SlowLayout(root, modules=modules), Layout(root, modules=modules)
        for rel in modules:
            names = import_names((root / rel).read_text(encoding="utf-8"))
            for name in [*names, *(f"{n}.missing_attr" for n in names), ".", "..", "...beyond"]:
                expected = by_path.resolve(name, root / rel)
                assert by_rel.resolve_in(name, rel) == expected == by_rel.resolve_in(name, rel), (root.name, rel, name)
                checked += 1
                found += expected is not None
    assert checked > 100 and found > 20  # project names among them, resolved both ways
