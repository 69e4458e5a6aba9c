"""One iterative walk over a libcst module: the syntax nodes in source order, their parents,
and the extent of each subtree.

libcst's visitors rebuild every node they visit and its metadata wrapper re-generates the
whole module to compute positions; a linter that reports a handful of nodes per file needs
neither. This walk reads each node's dataclass fields directly (about five times faster than
a no-op ``CSTVisitor``, measured in benchmarks/README.md) and skips the nodes no analysis or
rule looks at: whitespace, comments, commas, brackets and operator tokens (their parent's
fields still hold them).

Every later question about order or nesting is answered from the preorder numbering:
``a`` is inside ``b`` when ``order[b] < order[a] < end[b]``, and ``a`` comes before ``b`` in the
source when ``order[a] < order[b]``. Nothing here needs positions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import libcst as cst

# Nodes no rule or analysis visits: whitespace and comments, punctuation, and the operator
# tokens of binary/unary/boolean/comparison/augmented operations (read through their parent).
_SKIPPED_BASES: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.Semicolon,
    cst.AssignEqual,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.BaseBinaryOp,
    cst.BaseUnaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseAugOp,
    cst.Asynchronous,
    cst.ParamStar,
    cst.ParamSlash,
    cst.ImportStar,
)

# Fields that only ever hold skipped nodes (or strings): not even read.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "leading_lines", "lines_after_decorators",
        "header", "footer", "comma", "equal", "colon", "dot", "semicolon", "first_colon", "second_colon",
        "asynchronous", "operator", "newline", "trailing_whitespace", "relative", "star", "indent", "start",
        "end", "conversion", "whitespace_between", "posonly_ind",
    }
)

# Where a node type's dataclass field order differs from the order its parts appear in the
# source (the order libcst's visitors use). Checked against libcst on real code by
# tests/test_tree.py.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.TypeParam: ("param", "default"),
}

_fields_cache: dict[type, tuple[str, ...]] = {}
_skipped_cache: dict[type, bool] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    fields = _fields_cache.get(node_type)
    if fields is None:
        declared = tuple(f.name for f in dataclasses.fields(node_type))
        names = _SOURCE_ORDER.get(node_type, declared)
        # (older libcst releases lack some fields, e.g. `type_parameters`)
        fields = tuple(n for n in names if n in declared and n not in _SKIPPED_FIELDS and not n.startswith("whitespace"))
        _fields_cache[node_type] = fields
    return fields


def is_skipped(node_type: type) -> bool:
    skipped = _skipped_cache.get(node_type)
    if skipped is None:
        skipped = _skipped_cache[node_type] = issubclass(node_type, _SKIPPED_BASES)
    return skipped


def _kept_node_type(node_type: type) -> bool:
    """Is a value of this type a syntax node the walk keeps? (Per type, cached: isinstance
    against libcst's abstract base classes is slow, and this runs for every field.)"""
    kept = _kept_cache.get(node_type)
    if kept is None:
        kept = _kept_cache[node_type] = issubclass(node_type, cst.CSTNode) and not is_skipped(node_type)
    return kept


_kept_cache: dict[type, bool] = {}


def exact_types(classes: tuple[type, ...]) -> frozenset[type]:
    """The node types that are instances of ``classes``: the concrete ones themselves, and
    every concrete subclass of an abstract one. `type(n) in exact_types(...)` answers as
    isinstance does on parsed trees (libcst's concrete node classes have no subclasses) and
    costs a tenth of it: isinstance against libcst's classes calls ABCMeta's check in Python
    whenever the answer is no, and the analyses ask it of most nodes they visit."""
    found = _exact_cache.get(classes)
    if found is None:
        found, todo = set(), list(classes)
        while todo:
            cls = todo.pop()
            found.add(cls)
            todo.extend(cls.__subclasses__())
        found = _exact_cache[classes] = frozenset(found)
    return found


_exact_cache: dict[tuple[type, ...], frozenset[type]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of ``node`` in source order (skipped node types left out)."""
    out: list[cst.CSTNode] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        value_type = type(value)
        if value_type is list or value_type is tuple:
            for item in value:
                if _kept_node_type(type(item)):
                    out.append(item)
        elif _kept_node_type(value_type):
            out.append(value)
    return out


@dataclass
class Tree:
    """The walked module. ``nodes`` is in preorder (source order); ``end[i]`` is one past the
    last node of ``nodes[i]``'s subtree."""

    module: cst.Module
    nodes: list[cst.CSTNode]
    parents: dict[cst.CSTNode, cst.CSTNode]
    order: dict[cst.CSTNode, int]
    end: list[int]
    _all_yields: list[cst.Yield] | None = dataclasses.field(default=None, repr=False)
    _yields: dict[cst.CSTNode, list[cst.Yield]] = dataclasses.field(default_factory=dict, repr=False)

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Is ``ancestor`` a strict ancestor of ``node``? (False for nodes the walk skipped.)"""
        a = self.order.get(ancestor)
        n = self.order.get(node)
        return a is not None and n is not None and a < n < self.end[a]

    def subtree(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node`` and everything under it, in source order."""
        i = self.order[node]
        return self.nodes[i : self.end[i]]

    def walk_subtree(self, node: cst.CSTNode, prune: tuple[type, ...] = ()):
        """``node`` and its descendants in source order, leaving out (with everything under
        them) descendants of the ``prune`` types: nested functions, say."""
        i = self.order[node]
        stop = self.end[i]
        nodes, end = self.nodes, self.end
        yield nodes[i]
        i += 1
        if not prune:
            yield from nodes[i:stop]
            return
        pruned = exact_types(prune)
        while i < stop:
            n = nodes[i]
            if type(n) in pruned:
                i = end[i]
                continue
            yield n
            i += 1

    def yields(self, func: cst.FunctionDef) -> list[cst.Yield]:
        """The `yield` expressions of ``func``'s own body (not of the functions, lambdas and
        classes nested in it), in source order. Memoised, and found among the module's yields
        rather than by a walk of the body: the summary and the value analysis ask it of every
        function, several times, and most modules yield nothing."""
        found = self._yields.get(func)
        if found is None:
            if self._all_yields is None:
                self._all_yields = [n for n in self.nodes if type(n) is cst.Yield]
            body = func.body
            found = self._yields[func] = [y for y in self._all_yields if y is body or (self.inside(y, body) and self._owned_by(y, body))]
        return found

    def _owned_by(self, node: cst.CSTNode, body: cst.CSTNode) -> bool:
        """Is no function, lambda or class between ``node`` and ``body`` (an ancestor of it)?"""
        current = self.parents.get(node)
        while current is not None and current is not body:
            if type(current) in SCOPE_TYPES:
                return False
            current = self.parents.get(current)
        return current is body

    def after(self, node: cst.CSTNode, other: cst.CSTNode) -> bool:
        """Does ``node`` start after the whole of ``other`` (in source order)?"""
        return self.order[node] >= self.end[self.order[other]]


def innermost(parents: dict, memo: dict, node: cst.CSTNode, types: frozenset[type]) -> cst.CSTNode | None:
    """The nearest strict ancestor of ``node`` of one of ``types`` (exact types: isinstance
    against libcst's abstract classes is slow), None when there is none; memoised in ``memo``
    per node, and an ancestor already answered answers for the nodes below it (the rules and
    the summary ask this of most calls and names)."""
    found = memo.get(node, memo)
    if found is not memo:
        return found
    anc = parents.get(node)
    while anc is not None and type(anc) not in types:
        known = memo.get(anc, memo)
        if known is not memo:  # `anc` is of none of the types: its answer is this node's too
            anc = known
            break
        anc = parents.get(anc)
    memo[node] = anc
    return anc


# Exact node types (see exact_types) that the analyses' walks stop at.
SCOPE_TYPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})  # what a nested body belongs to
LOOP_TYPES = frozenset({cst.For, cst.While})


def walk(module: cst.Module) -> Tree:
    """Number every syntax node of ``module`` in source order, iteratively (deep expressions
    cannot exhaust the Python stack here)."""
    nodes: list[cst.CSTNode] = []
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    order: dict[cst.CSTNode, int] = {}
    end: list[int] = []
    stack: list = [module]
    while stack:
        item = stack.pop()
        if type(item) is int:  # leaving the subtree of nodes[item]
            end[item] = len(nodes)
            continue
        index = len(nodes)
        nodes.append(item)
        order[item] = index
        end.append(0)
        stack.append(index)
        kids = children(item)
        for child in reversed(kids):
            parents[child] = item
            stack.append(child)
    return Tree(module, nodes, parents, order, end)
