"""Which scripts to verify, their fixture pragmas, and how each one is run."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from torchsync_lint.verify import steady_state
from torchsync_lint.verify.runner import RunOptions

PRAGMA = "# torchsync-fixture:"


@dataclass
class Script:
    path: str
    steps: int = steady_state.DEFAULT_STEPS
    warmup: int = steady_state.DEFAULT_WARMUP
    requires: list[str] = field(default_factory=list)
    is_fixture: bool = False  # carries the fixture pragma: exiting without its RESULT line is an early exit
    user_args: list[str] = field(default_factory=list)  # after `--` on the command line
    options: RunOptions = field(default_factory=RunOptions)

    @property
    def args(self) -> list[str]:
        """The script's command line: a fixture is told its step count (the fixture
        contract); any other script gets only the user's arguments and is stopped by the
        step clock (``options.stop_after``)."""
        return (["--steps", str(self.steps)] if self.is_fixture else []) + self.user_args

    @property
    def expected_steps(self) -> int:
        """Steps the run is expected to take (for progress): a fixture's own count, or where
        the step clock stops the script."""
        return self.steps if self.is_fixture else (self.options.stop_after or self.steps)

    @property
    def missing_requirements(self) -> list[str]:
        return [name for name in self.requires if not requirement_available(name)]

    @property
    def fixed_path(self) -> str | None:
        candidate = self.path[: -len(".py")] + ".fixed.py"
        return candidate if os.path.exists(candidate) else None


def requirement_available(name: str) -> bool:
    """Whether ``name`` (``pkg`` or ``pkg.sub``) can be imported, without importing anything
    here: ``find_spec`` of a top-level name only searches; a submodule is searched for in
    its package's directories (``find_spec("pkg.sub")`` would import ``pkg`` into the
    verifier). A submodule that is not a file there (made when its package is imported) is
    asked about in a child process."""
    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    qualified = top
    for part in rest.split(".") if rest else []:
        locations = spec.submodule_search_locations
        if locations is None:
            return False  # `top` is a module, not a package
        qualified += "." + part
        spec = importlib.machinery.PathFinder.find_spec(qualified, list(locations))
        if spec is None:
            return _importable_in_child(name)
    return True


def _importable_in_child(name: str) -> bool:
    code = "import importlib, sys\ntry:\n    importlib.import_module(sys.argv[1])\nexcept Exception:\n    sys.exit(1)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, name], stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def is_fixed_variant(path: str) -> bool:
    return path.endswith(".fixed.py")


def has_pragma(path: str) -> bool:
    """The fixture pragma in the first 40 lines, read in the encoding the file declares (PEP 263)."""
    try:
        with open(path, "rb") as handle:
            head = b"".join(line for _, line in zip(range(40), handle))
        encoding, _ = tokenize.detect_encoding(iter(head.splitlines(keepends=True)).__next__)
        return PRAGMA in head.decode(encoding, "replace")
    except (OSError, SyntaxError, LookupError):
        return False


def project_root(script: str) -> str | None:
    """The project root as `check` finds it (project/layout.py: the nearest directory at or
    above the script's with a pyproject.toml, setup.cfg, setup.py or .git), where ``python
    train.py`` is usually run from; None without one."""
    from torchsync_lint.project.layout import project_root as root_of

    root, marked = root_of(script)  # (a file that does not exist yet: its directory's project)
    return str(root) if marked else None


def project_directory(path: str) -> str:
    """The project root of ``path`` (project_root), else its directory: what the budget's
    script keys and the verifier's call sites are relative to."""
    return project_root(path) or os.path.dirname(os.path.abspath(path))


def _source_roots(root: str) -> list[str]:
    """Where `check` resolves the project's imports from (the root, `src/`, the `src`
    setting), plus a `src/` of plain modules, which Python would import from too."""
    from torchsync_lint.project.layout import Layout

    roots = [str(r) for r in Layout(Path(root)).roots]
    src = os.path.join(root, "src")
    if os.path.isdir(src) and os.path.realpath(src) not in map(os.path.realpath, roots):
        roots.append(src)
    return roots


def run_options(script: str, cwd: str | None = None, sys_path: list[str] | None = None, stop_after: int | None = None) -> RunOptions:
    """Where and with which import paths a script runs. Default: in its project root, with
    the root (and its ``src/`` for a src layout) on ``sys.path`` after everything else, so
    the project's own packages import and nothing installed is shadowed. ``--sys-path``
    replaces that default and comes first, like PYTHONPATH; ``--cwd`` replaces the root as
    the working directory."""
    root = project_root(script)
    fallback: list[str] = []
    if not sys_path and root is not None:
        fallback = _source_roots(root)
    return RunOptions(
        cwd=os.path.abspath(cwd) if cwd else root,
        sys_path=[os.path.abspath(p) for p in sys_path or []],
        fallback_path=fallback,
        stop_after=stop_after,
    )


def read_pragmas(path: str) -> dict[str, str]:
    from torchsync_lint.markers import read_pragmas as read

    try:
        return read(path)
    except (OSError, UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return {}  # an unreadable file is still replayed; the run reports what is wrong


def load_script(
    path: str,
    steps: int | None = None,
    warmup: int | None = None,
    user_args: list[str] | None = None,
    cwd: str | None = None,
    sys_path: list[str] | None = None,
) -> Script:
    pragmas = read_pragmas(path)
    requires = [name for name in pragmas.get("requires", "").split(",") if name]
    script = Script(
        path=path,
        steps=steps if steps is not None else _int(pragmas.get("steps"), steady_state.DEFAULT_STEPS),
        warmup=warmup if warmup is not None else _int(pragmas.get("warmup"), steady_state.DEFAULT_WARMUP),
        requires=requires,
        is_fixture=has_pragma(path),
        user_args=list(user_args or []),
    )
    # A fixture runs the steps its --steps says (some over several epochs or loaders): the
    # step clock stops only other scripts.
    stop_after = None if script.is_fixture else steady_state.stop_tick(script.steps, script.warmup)
    script.options = run_options(path, cwd, sys_path, stop_after)
    return script


def discover(paths: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Expand paths into script files. A directory contributes its ``*.py`` files that carry
    the fixture pragma (helpers and ``*.fixed.py`` variants are not scripts to check); a file
    given explicitly is always used unless it is a ``*.fixed.py`` variant.

    Returns (scripts, missing paths, paths that hold no runnable script).
    """
    found: list[str] = []
    missing: list[str] = []
    empty: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            these = [str(p) for p in sorted(path.rglob("*.py")) if not is_fixed_variant(p.name) and has_pragma(str(p))]
        elif path.is_file():
            these = [] if is_fixed_variant(path.name) or path.suffix not in (".py", ".pyw", "") else [str(path)]
        else:
            missing.append(raw)
            continue
        if not these:
            empty.append(raw)
        found += these
    return list(dict.fromkeys(found)), missing, empty


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
