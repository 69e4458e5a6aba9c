"""A run over some files of a project reads the import rows its files' components need, not
every module's (project/graph.py, rows_needed): the components must come out exactly as the
whole graph gives them, whichever way a module is imported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchsync_lint.config import Config
from torchsync_lint.project import session as session_module
from torchsync_lint.project.graph import import_hints
from torchsync_lint.project.session import Session


def _write(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text("")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


UNRELATED = {f"tools/tool{i}.py": f"import os\nfrom tools import tool{(i + 1) % 12}\n\nVALUE = {i}\n" for i in range(12)}
UNRELATED["tools/__init__.py"] = ""

# Each way of importing `pkg/engine.py` (the module the run names) from `user.py`.
IMPORTERS = {
    "absolute": "import pkg.engine\n",
    "from a package": "from pkg import engine\n",
    "the package alone": "import pkg\n",  # its reach: every module inside pkg
    "parenthesized": "from pkg import (\n    helpers,\n    engine,\n)\n",
    "backslash": "from pkg import helpers, \\\n    engine\n",
    "on one line after a colon": "try: import pkg.engine\nexcept ImportError: pass\n",
    "aliased": "import pkg.engine as eng\n",
}


@pytest.mark.parametrize("how", sorted(IMPORTERS))
def test_a_run_over_one_file_sees_the_component_the_whole_graph_gives(tmp_path, how):
    _write(tmp_path, {
        **UNRELATED,
        "pkg/__init__.py": "",
        "pkg/engine.py": "import torch\n\ndef step(x):\n    return x.item()\n",
        "pkg/helpers.py": "def h():\n    return 1\n",
        "user.py": IMPORTERS[how],
        "other.py": "import tools.tool3\n",
    })
    target = str(tmp_path / "pkg" / "engine.py")
    whole = Session(tmp_path, Config(), use_cache=False)
    expected = whole.component("pkg/engine.py")
    assert "user.py" in expected
    named = Session(tmp_path, Config(), use_cache=False, files=[target])
    assert named.component("pkg/engine.py") == expected
    assert named.connected("pkg/engine.py") == whole.connected("pkg/engine.py")
    assert named.dependencies("pkg/engine.py") == whole.dependencies("pkg/engine.py")


def test_a_relative_import_is_always_read(tmp_path):
    _write(tmp_path, {**UNRELATED, "pkg/__init__.py": "", "pkg/engine.py": "X = 1\n", "pkg/user.py": "from . import *\n"})
    named = Session(tmp_path, Config(), use_cache=False, files=[str(tmp_path / "pkg" / "engine.py")])
    assert named.component("pkg/engine.py") == Session(tmp_path, Config(), use_cache=False).component("pkg/engine.py")


def test_only_the_rows_the_component_needs_are_read_and_a_question_about_another_module_reads_the_rest(tmp_path, monkeypatch):
    _write(tmp_path, {**UNRELATED, "train.py": "import utils\n", "utils.py": "import torch\n"})
    read = []
    real = session_module.Session._import_names
    monkeypatch.setattr(session_module.Session, "_import_names", lambda self, rel: read.append(rel) or real(self, rel))
    session = Session(tmp_path, Config(), files=[str(tmp_path / "train.py")])
    assert session.component("train.py") == ["train.py", "utils.py"]
    # no tools/ module mentions either in an import; utils.py's imports name no project module
    # (only torch): its row is empty without parsing it
    assert sorted(set(read)) == ["train.py"]
    assert not list((tmp_path / ".torchsync_cache").rglob("graph/*/*.json"))  # a partial graph is not cached
    assert session.connected("tools/tool4.py")  # another module: every row is read now
    assert set(read) == set(session.modules()) - {"utils.py", "tools/__init__.py"}  # (an empty file imports nothing)
    assert list((tmp_path / ".torchsync_cache").rglob("graph/*/*.json"))  # and the whole graph cached


def test_findings_of_a_run_over_some_files_are_those_of_the_whole_tree(tmp_path):
    root = Path(__file__).parent / "data" / "entry_points" / "helper-item" / "project"
    _write(tmp_path, {**UNRELATED, **{p.name: p.read_text() for p in root.glob("*.py")}})
    whole = Session(tmp_path, Config(), use_cache=False)
    for name in ("train.py", "utils.py"):
        alone = Session(tmp_path, Config(), use_cache=False, files=[str(tmp_path / name)])
        got = [(f.line, f.code) for f in alone.lint(str(tmp_path / name)).findings]
        assert got == [(f.line, f.code) for f in whole.lint(str(tmp_path / name)).findings] and got


def test_import_hints_hold_every_word_an_import_statement_names():
    text = "import os\nfrom . import (a,\n  b)\nx = 1  # import y\nfrom pkg.sub import \\\n   zz\nif c: import q.r\n"
    words, relative = import_hints(text)
    assert {"os", "a", "b", "pkg", "sub", "zz", "q", "r"} <= words and relative
    assert import_hints("x = 1\n") == (frozenset(), False)


def test_a_directory_that_is_not_a_package_adds_no_word(tmp_path, monkeypatch):
    """`fixtures/metrics/naive.py` (no `__init__.py` above it) is imported only by a name that
    ends in `naive`: a module importing some other `metrics` is not read, while importing a
    regular package still reaches every module inside it."""
    _write(tmp_path, {
        **UNRELATED,
        "fixtures/metrics/naive.py": "import torch\n",
        "lib/__init__.py": "",
        "lib/metrics.py": "X = 1\n",
        "user.py": "from lib import metrics\n",
        "pkg/__init__.py": "",
        "pkg/deep/mod.py": "import torch\n",
        "other.py": "import pkg\n",
    })
    read = []
    real = session_module.Session._import_names
    monkeypatch.setattr(session_module.Session, "_import_names", lambda self, rel: read.append(rel) or real(self, rel))
    named = Session(tmp_path, Config(), use_cache=False, files=[str(tmp_path / "fixtures/metrics/naive.py")])
    assert named.component("fixtures/metrics/naive.py") == ["fixtures/metrics/naive.py"]
    assert read == []  # (naive.py itself imports only torch: not parsed either)
    deep = Session(tmp_path, Config(), use_cache=False, files=[str(tmp_path / "pkg/deep/mod.py")])
    whole = Session(tmp_path, Config(), use_cache=False)
    assert deep.component("pkg/deep/mod.py") == whole.component("pkg/deep/mod.py") and "other.py" in whole.component("pkg/deep/mod.py")


TRICKY = {
    "pkg/__init__.py": "from .engine import step\n",
    "pkg/engine.py": "import torch\nfrom \\\n    . import helpers\n\ndef step(x):\n    return x\n",
    "pkg/helpers.py": "def h():\n    return 1\n",
    "pkg/módulo.py": "X = 1\n",
    "user.py": "import pkg.módulo\n",
    "doc.py": '"""Example:\n\n    import pkg\n"""\nimport os\n',
    "colon.py": "try: import pkg.helpers\nexcept ImportError: pass\n",
    "only_torch.py": "import torch\nimport numpy as np\n",
    "scripts/run.py": "import tool\n",
    "scripts/tool.py": "import json\n",
    "broken.py": "import pkg\ndef f(:\n",
}


def test_rows_left_unparsed_are_the_rows_a_parse_gives(tmp_path, monkeypatch):
    """The modules whose import statements cannot name a project module are not parsed: the
    whole graph is the one parsing every module gives, also for a relative import after a
    backslash, a module name that is not ASCII, an import in a docstring and a syntax error."""
    _write(tmp_path, {**UNRELATED, **TRICKY})
    fast = Session(tmp_path, Config(), use_cache=False).graph()
    monkeypatch.setattr(session_module.Session, "_names_no_module", lambda self, rel: False)
    parsed = Session(tmp_path, Config(), use_cache=False).graph()
    assert fast == parsed
    assert fast["imports"]["pkg/engine.py"] == ["pkg/__init__.py", "pkg/helpers.py"]
    assert fast["imports"]["user.py"] == ["pkg/módulo.py"]
    assert fast["imports"]["scripts/run.py"] == ["scripts/tool.py"]


def test_import_names_of_no_project_module_resolve_to_none_without_a_path_walk(tmp_path):
    """An absolute name whose first part is no directory or module name of the project is
    not the project's (the Layout answers None at once); the answers are those of the walk."""
    _write(tmp_path, {**UNRELATED, **TRICKY})
    session = Session(tmp_path, Config(), use_cache=False)
    session.modules()  # (what the layout resolves names to)
    layout = session.layout
    importer = tmp_path / "scripts" / "run.py"
    for name in ("torch.nn", "numpy", "tool", "pkg.engine.step", "tools.tool1", "pkg.módulo", "json", "scripts.tool"):
        assert layout.resolve(name, importer) == layout._resolve(name, str(importer)), name  # noqa: SLF001
    assert layout.resolve("torch.nn", importer) is None and layout.resolve("tool", importer) is not None
