"""The fixed version of a script *and of the project modules it imports*, as a temporary tree.

`--fix --unsafe-fixes` fixes data.py's ``DataLoader(...)`` (pin_memory, workers) as well as
train.py's loop: a fixed run that imports the unfixed data.py measures half the fix. So every
project module the script reaches in the project view `check` uses (its imports, transitively,
in the project's import graph) is fixed like the script, each in the project session against
the project as it is on disk plus its own edits, as `--fix` does.

The user's files are never written. The fixed modules are written into a temporary folder
that mirrors each import root they are found under (the script's directory, ``--sys-path``,
the project roots), placed on ``sys.path`` before the root it mirrors. A package holding a
fixed module is mirrored as real directories down to that module, every other entry a symbolic
link to the user's file or directory (copied where links cannot be made), so ``import
pkg.other`` and data read relative to ``__file__`` work as before. ``__pycache__`` is not
linked: Python would write the fixed modules' bytecode into the user's cache.
"""

from __future__ import annotations

import os
import shutil
import tokenize
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field

from torchsync_lint.verify.scripts import Script


@dataclass(frozen=True)
class FixedVariant:
    """The fixed script to run, the ``sys.path`` entries it needs before the original's, and
    the project modules (as the project names them) fixed besides the script."""

    path: str
    sys_path: list[str]
    modules: tuple[str, ...] = ()

    # Reads as the pair ``(fixed_path, extra_sys_path)`` the backends take (unpacked, indexed).
    def _pair(self) -> tuple[str, list[str]]:
        return self.path, self.sys_path

    def __iter__(self) -> Iterator:
        return iter(self._pair())

    def __getitem__(self, index):
        return self._pair()[index]

    def __len__(self) -> int:
        return 2


@dataclass
class ProjectFixes:
    script: bytes  # the script's fixed bytes (its own, when only its modules changed)
    script_changed: bool = False
    modules: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # absolute path -> (project name, fixed bytes)

    @property
    def changed(self) -> bool:
        return self.script_changed or bool(self.modules)


def fix_project(script: str, config) -> ProjectFixes:
    """The fixer's output for ``script`` and for each project module it imports that the
    fixer changes (unsafe fixes included: what `--fix --unsafe-fixes` would write)."""
    from torchsync_lint.project.sessions import Sessions

    with closing(Sessions.for_files([script], config).session_for(script)) as session:
        new, changed = _fixed_bytes(session, script, config)
        fixes = ProjectFixes(new, changed)
        for rel in _imported_modules(session, script):
            path = str(session.root / rel)
            try:
                new, changed = _fixed_bytes(session, path, config)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                continue  # unreadable here: `--fix` would report it and leave it; the run imports the original
            if changed:
                fixes.modules[os.path.realpath(path)] = (rel, new)
    return fixes


def _fixed_bytes(session, path: str, config) -> tuple[bytes, bool]:
    """(the fixed file, whether it changed). Decoded as the file declares (PEP 263: a latin-1
    module is not UTF-8) and encoded back in that encoding, so its coding line stays true."""
    from torchsync_lint.fixer import fix_source

    with open(path, "rb") as handle:
        raw = handle.read()
    encoding, _ = tokenize.detect_encoding(iter(raw.splitlines(keepends=True)).__next__)
    source = raw.decode(encoding)
    with session.editing(path) as lint:
        fixed = fix_source(source, path, config, unsafe=True, lint=lint).new_source
    if fixed == source:
        return raw, False
    return fixed.encode("utf-8" if encoding == "utf-8-sig" else encoding), True


def _imported_modules(session, script: str) -> list[str]:
    """The project modules ``script`` reaches by imports, transitively (project names): the
    rows of its import-graph component are read whole, so the closure is exact."""
    if not session.layout.contains(script):
        return []
    own = session.layout.relpath(script)
    if own not in session.modules() or not session.connected(own):
        return []
    reach = session.graph()["reach"]
    seen, todo = {own}, [own]
    while todo:
        for module in reach.get(todo.pop(), []):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    return sorted(m for m in seen - {own} if m.endswith(".py"))


def write_variant(fixes: ProjectFixes, script: Script, directory: str) -> FixedVariant:
    """Write the fixed script and modules under ``directory`` (the caller removes it)."""
    # Real paths throughout: a module is placed by where it is under a root, and a link in
    # the path (/tmp -> /private/tmp) must not hide that.
    script_dir = os.path.dirname(os.path.realpath(script.path))
    here = os.path.join(directory, "script")  # the fixed script's directory: sys.path[0] of its run
    os.makedirs(here)
    stem = os.path.basename(script.path)
    path = os.path.join(here, (stem[: -len(".py")] if stem.endswith(".py") else stem) + ".autofixed.py")
    with open(path, "wb") as handle:
        handle.write(fixes.script)
    modules = {p: new for p, (_, new) in fixes.modules.items()}
    placed = set(_mirror(script_dir, here, modules))
    # The original's directory next, for its unfixed neighbours (its fixed ones are in `here`,
    # first), then the mirrors of the other roots: each before the root it mirrors. (They all
    # come before every --sys-path entry: a module of the same name in an earlier root than
    # the fixed one's would lose to it; a fixed project module also comes before an installed
    # copy of the project, which an editable install, the usual one, does not change.)
    extra = [script_dir]
    roots = [os.path.realpath(p) for p in [*script.options.sys_path, *script.options.fallback_path] if os.path.isdir(p)]
    roots = [p for p in dict.fromkeys(roots) if p != script_dir]
    for index, root in enumerate(roots):
        mirror = os.path.join(directory, f"root-{index}")
        found = _mirror(root, mirror, modules)
        if found:
            placed |= set(found)
            extra.append(mirror)
    names = tuple(sorted(fixes.modules[p][0] for p in placed))
    return FixedVariant(path, extra, names)


def _mirror(root: str, dest: str, fixed: dict[str, bytes]) -> list[str]:
    """The fixed modules under ``root`` written at their place under ``dest``; returns them.
    Only the directories leading to a fixed module are mirrored (the root itself never is:
    it may hold a virtual environment or the data)."""
    root = os.path.realpath(root)
    under = {p: new for p, new in fixed.items() if os.path.commonpath([root, p]) == root and p != root}
    if not under:
        return []
    os.makedirs(dest, exist_ok=True)
    tops: set[str] = set()
    for path, new in under.items():
        parts = os.path.relpath(path, root).split(os.sep)
        if len(parts) == 1:
            _write(os.path.join(dest, parts[0]), new)
        else:
            tops.add(parts[0])
    for top in sorted(tops):
        _mirror_tree(os.path.join(root, top), os.path.join(dest, top), under)
    return list(under)


def _mirror_tree(source: str, dest: str, fixed: dict[str, bytes]) -> None:
    os.makedirs(dest, exist_ok=True)
    prefix = source + os.sep
    for name in sorted(os.listdir(source)):
        original = os.path.join(source, name)
        target = os.path.join(dest, name)
        if name == "__pycache__":
            continue
        if original in fixed:
            _write(target, fixed[original])
        elif any(p.startswith(original + os.sep) for p in fixed if p.startswith(prefix)):
            _mirror_tree(original, target, fixed)
        else:
            _link(original, target)


def _link(original: str, target: str) -> None:
    try:
        os.symlink(original, target, target_is_directory=os.path.isdir(original))
    except OSError:  # no symbolic links here (Windows without the privilege): a copy reads the same
        if os.path.isdir(original):
            shutil.copytree(original, target, symlinks=True)
        else:
            shutil.copy2(original, target)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
