"""The import graph reads a module's import names by parsing only its import statements
(project/graph.py, ``_scanned_imports``): the names must be exactly those of Python's ast of
the whole module, in the same order, or the scan must give up (None) and leave the module to
that ast."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from torchsync_lint.project import graph
from torchsync_lint.project.graph import _scanned_imports, import_names, parse_module


def _whole(source: str) -> list[str]:
    tree = parse_module(source)
    assert tree is not None
    return import_names(source, tree)


CASES = {
    "plain": "import os\nimport proj.engine as eng, proj.data\nfrom . import utils\nfrom ..pkg.mod import (a, b as c)\n",
    "the word in strings and comments": textwrap.dedent(
        '''\
        """Usage:
        import proj.secret
        from proj import hidden
        """
        s = "import proj.x"  # import proj.y
        t = 'from proj import z'
        u = f"{x!r} import {y}"
        v = rb"import \\" proj"
        import proj.real
        '''
    ),
    "nested and indented": textwrap.dedent(
        """\
        def f():
            import proj.inner
            class A:
                def g(self):
                    from .deep import thing
        if TYPE_CHECKING: from proj.types import T
        """
    ),
    "a try on one line with its except": "try: import proj.fast\nexcept ImportError: from proj import slow\nelse: pass\n",
    "after a semicolon": "x = 1; import proj.a; y = 2\n",
    "parenthesised with a comment holding a parenthesis": "from proj import (  # see (below)\n    a,  # )\n    b,\n)\n",
    "backslash continuations": "from proj.engine \\\n    import train\nimport proj.a, \\\n    proj.b\n",
    "a continued string before": 'x = "abc \\\nimport proj.not_an_import"\nimport proj.yes\n',
    "crlf": "import os\r\nfrom proj import a\r\n",
    "names that contain the word": "reimport = 1\n_import_thing = 2\nx.important = 3\nimport proj.real\n",
    "a star import": "from proj.all import *\nfrom .rel import *\n",
    "no import at all": "x = 1\n",
}


@pytest.mark.parametrize("source", CASES.values(), ids=CASES.keys())
def test_the_scan_gives_the_names_of_the_whole_module_ast(source):
    assert _scanned_imports(source) == _whole(source)


def test_a_statement_the_scan_cannot_cut_out_is_left_to_the_whole_module_ast():
    # An import on the line that closes a header spanning lines: the line alone never parses.
    source = "if (a and\n        b): import proj.x\n"
    assert _scanned_imports(source) is None
    assert import_names(source) == _whole(source) == ["proj.x"]
    # An import after a triple-quoted string closing on the same line: the line starts in it.
    source = 'x = """abc\ndef"""; import proj.y\n'
    assert _scanned_imports(source) is None
    assert import_names(source) == ["proj.y"]


def test_a_module_with_a_syntax_error_elsewhere_keeps_its_imports():
    source = "import proj.engine\n\ndef broken(:\n    pass\n"
    assert parse_module(source) is None
    assert import_names(source) == ["proj.engine"]


def test_the_scan_parses_statements_only(monkeypatch):
    source = "import os\n\n" + "x = [i for i in range(10)]\n" * 200 + "def f():\n    from proj import a\n"
    parsed: list[str] = []
    real = graph.parse_tree
    monkeypatch.setattr(graph, "parse_tree", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    assert import_names(source) == ["os", "proj", "proj.a"]
    assert parsed == ["import os", "if 1:\n    from proj import a"]


def test_the_scan_agrees_with_the_ast_over_this_package_and_the_standard_library():
    # Real code in quantity: every module of this package and its tests, and a sample of the
    # standard library (docstrings full of `import`, every string form, nested imports).
    stdlib = Path(textwrap.__file__).parent
    paths = sorted(Path(graph.__file__).parents[1].rglob("*.py")) + sorted(Path(__file__).parent.rglob("*.py"))
    paths += sorted(stdlib.glob("*.py"))[:: 3]
    checked = 0
    for path in paths:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        tree = parse_module(source)
        if tree is None:
            continue
        scanned = _scanned_imports(source)
        assert scanned is None or scanned == import_names(source, tree), path
        checked += scanned is not None
    assert checked > 200, (checked, sys.version)
