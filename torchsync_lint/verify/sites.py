"""Where a recorded sync happened in the user's *project*, not only in the script.

The matching of findings needs the line of the replayed script (``UserFrameFinder``). The sync
budget (budget.py) needs more: the innermost line of any file of the project (a per-step
helper in ``engine.py`` called from ``train.py``), the library frame that made the sync when it
happened inside a library (``torchmetrics/utilities/data.py:206 _bincount``), and the chain of
calls in between, for the report.

Runs in the harness process on every recorded event, so it stays cheap: each code file is
classified once (project / library / ours / standard library), and identical sites are
interned; the record carries a table of sites and one index per event. No torch: the
harnesses import it before the script runs, and the parent's tests import it too.

A frame is *project* when its file is under the project root (the nearest directory above the
script with a pyproject.toml, setup.cfg or .git, else the script's directory) and is not in an
installed location (site-packages, the interpreter's prefix) nor part of torchsync-lint.
"""

from __future__ import annotations

import io
import linecache
import os
import sys
import sysconfig
import tokenize
from collections.abc import Callable
from types import FrameType

from torchsync_lint.verify.scripts import project_directory

PROJECT = "project"
LIBRARY = "library"
OURS = "ours"
STDLIB = "stdlib"

# torch modules that only route a call (operator overloads, torch-function and dispatch
# handling, decorators): never the "library frame" worth naming. Anything else in torch is
# (torch.utils.tensorboard's make_np, torch.amp.grad_scaler's found_inf read).
TORCH_PLUMBING = frozenset(
    {
        "torch._tensor",
        "torch._tensor_str",
        "torch.overrides",
        "torch.functional",
        "torch._ops",
        "torch.utils._python_dispatch",
        "torch.utils._contextlib",
        "torch.utils._device",
        "torch.autograd.grad_mode",
        "torch.nn.modules.module",
        "torch._jit_internal",
        "torch._compile",
    }
)
TORCH_PLUMBING_PACKAGES = ("torch._dynamo.",)  # dynamo's disable() wraps the dispatch modes
CHAIN_LIMIT = 6  # project frames kept per site (innermost last)
_OUR_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _installed_prefixes() -> tuple[str, ...]:
    """Directories whose files are never the user's project: the interpreter's own prefixes
    and standard library (a venv inside the project root included)."""
    paths = {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix), getattr(sys, "base_exec_prefix", sys.exec_prefix)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(key)
        if value:
            paths.add(value)
    return tuple(sorted(os.path.abspath(p) + os.sep for p in paths if p))


class SiteFinder:
    """``locate()`` -> the index of the current call site in ``table``; see the module doc."""

    def __init__(self, script: str, root: str | None = None, construct: Callable[[], str | None] | None = None) -> None:
        self.script = os.path.abspath(script)
        self.root = os.path.abspath(root or project_directory(script)) + os.sep
        self.construct = construct or (lambda: None)  # the Python-level read running now (__bool__, item...)
        self.table: list[dict] = []
        self._index: dict[tuple, int] = {}
        self._places: dict[str, str] = {}  # co_filename -> PROJECT / LIBRARY / OURS / STDLIB
        self._installed = _installed_prefixes()

    def place(self, filename: str) -> str:
        known = self._places.get(filename)
        if known is None:
            known = self._places[filename] = self._classify(filename)
        return known

    def _classify(self, filename: str) -> str:
        if filename.startswith("<"):
            return STDLIB  # <frozen runpy>, <string>
        path = os.path.abspath(filename)
        if path.startswith(_OUR_PACKAGE):
            return OURS
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            return LIBRARY
        if path.startswith(self._installed):
            return STDLIB
        if path.startswith(self.root) or path == self.script:
            return PROJECT
        return LIBRARY

    def locate(self, line_override: int | None = None, skip: int = 1) -> int:
        """Index of the site of the sync being recorded now. ``line_override``: the recorder
        already knows the script line it belongs to (a deferred read put at its ``self.log``
        line); the site is then that line of the script, with the library frames of now."""
        frame: FrameType | None = sys._getframe(skip)
        project: list[tuple[str, int, str]] = []
        libraries: list[tuple[str, int, str]] = []  # innermost first, plumbing left out
        while frame is not None:
            code = frame.f_code
            place = self.place(code.co_filename)
            if place == PROJECT:
                project.append((os.path.abspath(code.co_filename), frame.f_lineno, _qualname(code)))
            elif place == LIBRARY and not project:
                module = frame.f_globals.get("__name__", "")
                if module not in TORCH_PLUMBING and not module.startswith(TORCH_PLUMBING_PACKAGES):
                    libraries.append((_module_path(module, code.co_filename), frame.f_lineno, _qualname(code)))
            frame = frame.f_back
        if line_override is not None:
            project.insert(0, (self.script, line_override, ""))
        key = (tuple(project[:CHAIN_LIMIT]), tuple(libraries), self.construct())
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self.table)
            self.table.append(self._site(project, libraries, key[2]))
        return index

    def _site(self, project: list[tuple[str, int, str]], libraries: list[tuple[str, int, str]], construct: str | None) -> dict:
        site: dict = {"file": None, "line": 0, "function": "", "code": "", "construct": construct, "library": None, "entry": None}
        if project:
            path, line, function = project[0]
            site.update(file=path, line=line, function=function, code=code_text(linecache.getline(path, line)))
        if libraries:
            site["library"] = list(libraries[0])  # where the sync happened
            site["entry"] = list(libraries[-1])  # what the project line called
        # Every library module in between, innermost first: what the sync is classified by
        # (Lightning's progress bar reads through a generic helper; the logger connector says why).
        site["modules"] = list(dict.fromkeys(path for path, _, _ in libraries))
        site["chain"] = [list(frame) for frame in reversed(project[:CHAIN_LIMIT])]
        return site


def code_text(line: str) -> str:
    """The statement text of a source line without its trailing comment (a budget line is
    matched by its text, and rewording a comment must not make it a new line)."""
    text = line.strip()
    if "#" not in text:
        return text
    try:
        for token in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            if token.type == tokenize.COMMENT:
                return text[: token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # part of a multi-line statement: keep it whole
    return text


def _qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+


def _module_path(module: str, filename: str) -> str:
    """``torchmetrics/utilities/data.py`` from the module name: the same in every install."""
    if not module or module == "__main__":
        return os.path.basename(filename)
    tail = "/__init__.py" if os.path.basename(filename) == "__init__.py" else ".py"
    return module.replace(".", "/") + tail


def with_sites(record: dict, state, finder: SiteFinder) -> dict:
    """Add the site table and each event's site to a harness record (run_record keeps the
    events in ``state.events`` order). They reach the parent as ``RunRecord.extra``."""
    record["sites"] = finder.table
    record["event_sites"] = [event.site for event in state.events]
    return record
