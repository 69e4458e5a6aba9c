"""The one-pass walk (analysis/tree.py) and on-demand positions (analysis/positions.py) agree
with libcst: the walk visits libcst's nodes in libcst's order, and every position equals what
libcst's whole-module PositionProvider computes."""

from __future__ import annotations

import glob
import os

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchsync_lint.analysis.positions import LazyPositions
from torchsync_lint.analysis.tree import exact_types, is_skipped, walk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
TOUR = os.path.join(ROOT, "tests", "data", "syntax_tour.py")
# The tool's own code: more, and more varied, real Python than the fixtures (every third
# module, to keep the suite's time in check; TORCHSYNC_CORPORA below runs on whole corpora).
OWN = sorted(glob.glob(os.path.join(ROOT, "torchsync_lint", "**", "*.py"), recursive=True))[::3]
SOURCES = [TOUR, *FIXTURES, *OWN]
# Third-party corpora are not committed (benchmarks/*/SOURCES.md says how to rebuild them):
# TORCHSYNC_CORPORA=dir1:dir2 runs the same comparison on every file under them.
CORPORA = sorted(
    path
    for directory in os.environ.get("TORCHSYNC_CORPORA", "").split(os.pathsep)
    if directory
    for path in glob.glob(os.path.join(directory, "**", "*.py"), recursive=True)
)


class _Order(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not is_skipped(type(node)):
            self.seen.append(node)
        return True


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: os.path.relpath(p, ROOT))
def test_walk_visits_libcst_nodes_in_libcst_order(path):
    module = cst.parse_module(_read(path))
    visitor = _Order()
    module.visit(visitor)
    tree = walk(module)
    assert [id(n) for n in tree.nodes] == [id(n) for n in visitor.seen]
    for node in tree.nodes[1:]:
        parent = tree.parents[node]
        assert tree.inside(node, parent) and not tree.inside(parent, node)


def _assert_positions_match(source: str) -> LazyPositions:
    module = cst.parse_module(source)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    tree = walk(module)
    positions = starts = lines = LazyPositions(module, source, tree)
    for i, node in enumerate(tree.nodes):
        if i % 16 == 0:  # fresh tables now and then, so that nodes are also computed on their own
            positions, starts, lines = (LazyPositions(module, source, tree) for _ in range(3))
        assert lines.line(node) == reference[node].start.line, (type(node).__name__, i)  # (on its own table)
        assert positions[node] == reference[node], (type(node).__name__, i)
        assert starts.start(node) == reference[node].start, (type(node).__name__, i)
    return positions


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: os.path.relpath(p, ROOT))
def test_positions_equal_libcst_position_provider(path):
    positions = _assert_positions_match(_read(path))
    assert not positions.used_fallback


@pytest.mark.skipif(not CORPORA, reason="set TORCHSYNC_CORPORA to the realworld/project corpora")
@pytest.mark.parametrize("path", CORPORA or [None])
def test_positions_equal_libcst_position_provider_on_the_corpora(path):
    try:
        source = _read(path)
        cst.parse_module(source)
    except (UnicodeDecodeError, cst.ParserSyntaxError):
        pytest.skip("not a parseable UTF-8 file")
    _assert_positions_match(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nx = 1",  # no newline at the end
        "import torch\r\nfor x in y:\r\n    z = x.item()\r\n",  # CRLF
        "import torch\nif a:\n\tb = 1\n\tif c:\n\t\td = 2\n",  # tab indentation
        "import torch\n\n\n# comment\n\n@dec\n\n# between\n@dec2(\n    1)\ndef f():\n    pass\n",
        "import torch\nclass A:\n    # lead\n    def f(self):  # trailing\n        return (\n            1 +\n            2)\n",
        "x = 1\n" + "".join(f"{'if' if i == 0 else 'elif'} x == {i}:\n    y = {i}\n" for i in range(60)) + "else:\n    y = -1\n",
        "match p:\n    case 1:\n        a = 1\n    # comment\n    case _:\n        b = (\n            2)\n",
        "def f(a, /, b, *, c):\n    return [x for x in a if x if b]\n",
        "try:\n    pass\n# c\nexcept E as e:\n    raise\nelse:\n    pass\nfinally:\n    pass\n",
        # statements on one physical line or on several: brackets, backslashes and strings
        # that span lines, several statements on a line (LazyPositions.line's shortcut)
        "a = f(1); b = g(\n    2)\nc = h(3); d = 4  # t\nx = \\\n    y(5)\ns = '''a\nb''' + k(6)\n"
        "if q: r(7); t(8)\nu = 'a\\\nb' + v(9)\nw = [m(10),\n  n(11)]; z = o(12)\n",
        "import torch\n@d\n\n# c\nclass A(\n    B):\n    @x(\n      1)\n    async def f(self):\n        pass\n    def g(\n      self): pass\n",
    ],
)
def test_positions_on_edge_cases(source):
    _assert_positions_match(source)


def test_positions_fall_back_to_libcst_when_ast_cannot_pair_statements():
    # ast (Python 3.10/3.11) cannot parse a PEP 695 type parameter list, libcst can
    source = "import torch\ndef first[T](x: T) -> T:\n    return x.item()\n"
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("this libcst cannot parse PEP 695 either")
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    tree = walk(module)
    positions = LazyPositions(module, source, tree)
    call = next(n for n in tree.nodes if isinstance(n, cst.Call))
    assert positions[call] == reference[call]
    import sys

    assert positions.used_fallback == (sys.version_info < (3, 12))


def test_walk_of_a_deep_expression_does_not_recurse():
    source = "import torch\nx = " + " + ".join(["a"] * 3000) + "\n"
    module = cst.parse_module(source)
    tree = walk(module)
    names = [n for n in tree.nodes if isinstance(n, cst.Name) and n.value == "a"]
    assert len(names) == 3000


_YIELDS = """\
def gen(items):
    for x in items:
        yield x
    def inner():
        yield 1
    class C:
        def m(self):
            yield 2
    f = lambda: (yield 3)
    y = yield (yield 4)


def plain():
    return [i for i in range(3)]
"""


def _walked_yields(tree, func):
    return [n for n in tree.walk_subtree(func.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if isinstance(n, cst.Yield)]


def test_yields_of_a_function_are_its_own_body_s():
    tree = walk(cst.parse_module(_YIELDS))
    funcs = {n.name.value: n for n in tree.nodes if isinstance(n, cst.FunctionDef)}
    lam = next(n for n in tree.nodes if isinstance(n, cst.Lambda))
    own = tree.yields(funcs["gen"])
    assert [cst.Module([]).code_for_node(y) for y in own] == ["yield x", "yield (yield 4)", "(yield 4)"]
    assert [len(tree.yields(funcs[name])) for name in ("inner", "m", "plain")] == [1, 1, 0]
    assert len(tree.yields(lam)) == 1  # a lambda whose body is the yield itself
    for func in [*funcs.values(), lam]:  # the same as a walk of the body that prunes nested scopes
        assert tree.yields(func) == _walked_yields(tree, func)
        assert tree.yields(func) is tree.yields(func)  # memoised


@pytest.mark.parametrize("path", [TOUR, *OWN[:4]], ids=lambda p: os.path.relpath(p, ROOT))
def test_memoised_enclosing_function_and_frame_equal_the_ancestor_walk(path):
    import random

    from torchsync_lint.analysis.indexer import build_index

    source = _read(path)
    module = cst.parse_module(source)
    tree = walk(module)
    index = build_index(tree, LazyPositions(module, source, tree))
    nodes = list(tree.nodes)
    random.Random(0).shuffle(nodes)  # answers reused from ancestors asked before, in any order
    for node in nodes:
        ancestors = list(index.ancestors(node))
        assert index.enclosing_function(node) is next((a for a in ancestors if isinstance(a, cst.FunctionDef)), None)
        if node is not module:
            assert index.frame_of(node) is next(a for a in ancestors if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.Module)))


def _node_classes(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _node_classes(sub)


def test_concrete_node_classes_have_no_subclasses():
    """The premise of exact type tests (`type(n) is cst.Name`, tree.exact_types): every
    class libcst parses into has no subclass, so the test answers as isinstance does."""
    parsed = {type(n) for path in SOURCES[:20] for n in walk(cst.parse_module(open(path, encoding="utf-8").read())).nodes}
    assert len(parsed) > 50
    assert {cls.__name__: [s.__name__ for s in cls.__subclasses__()] for cls in parsed if cls.__subclasses__()} == {}


@pytest.mark.parametrize(
    "classes",
    [(cst.Name,), (cst.For, cst.While), (cst.BaseExpression,), (cst.BaseSmallStatement, cst.FunctionDef), (cst.BaseCompoundStatement,), (cst.BaseString, cst.Call)],
)
def test_exact_types_answer_as_isinstance(classes):
    types = exact_types(classes)
    seen = 0
    for path in [TOUR, *FIXTURES]:
        for node in walk(cst.parse_module(open(path, encoding="utf-8").read())).nodes:
            assert (type(node) in types) is isinstance(node, classes), (type(node).__name__, classes)
            seen += type(node) in types
    assert seen > 0
    assert exact_types(classes) is types  # made once per tuple
