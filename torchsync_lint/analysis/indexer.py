"""The one pass over the walked module (analysis/tree.py) that fills its ModuleIndex
(analysis/index.py): definitions per scope, classes and what their methods store on `self`,
calls, loops, returns and the nodes of each type, in source order."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import ImportMap, dotted_parts
from torchsync_lint.analysis.index import ClassInfo, Def, ModuleIndex, Scope
from torchsync_lint.analysis.tree import Tree
from torchsync_lint.pytree import evaluated_literal


def build_index(tree: Tree, positions) -> ModuleIndex:
    index = ModuleIndex(ImportMap(), tree, positions)
    index.defs[tree.module] = {}
    _Indexer(index).run()
    return index


def _target_names(target: cst.BaseExpression, path: tuple[int, ...] = ()):
    """Yield (name, path) for every plain name bound by an assignment target."""
    if isinstance(target, cst.Name):
        yield target.value, path
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, el in enumerate(target.elements):
            value = el.value
            if isinstance(el, cst.StarredElement):
                yield from _target_names(value, (*path, -1))
            else:
                yield from _target_names(value, (*path, i))


def _self_attribute_targets(target: cst.BaseExpression, path: tuple[int, ...] = ()):
    """Yield (attribute, path) for every `self.x` inside a tuple/list assignment target."""
    for i, el in enumerate(target.elements):
        value = el.value
        if isinstance(el, cst.StarredElement):
            continue
        parts = dotted_parts(value) if isinstance(value, cst.Attribute) else None
        if parts and len(parts) == 2 and parts[0] == "self":
            yield parts[1], (*path, i)
        elif isinstance(value, (cst.Tuple, cst.List)):
            yield from _self_attribute_targets(value, (*path, i))


class _Indexer:
    """Fills a ModuleIndex from the walked nodes, in source order: ``handle_<Type>`` methods,
    looked up once per node type."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._handlers: dict[type, object] = {}

    def run(self) -> None:
        by_type = self.index.by_type
        handlers = self._handlers
        for node in self.index.tree.nodes:
            node_type = type(node)
            nodes = by_type.get(node_type)
            if nodes is None:
                nodes = by_type[node_type] = []
                handlers[node_type] = getattr(self, f"handle_{node_type.__name__}", None)
            nodes.append(node)
            handler = handlers[node_type]
            if handler is not None:
                handler(node)

    # helpers
    def _add(self, scope: Scope, d: Def) -> None:
        self.index.defs.setdefault(scope, {}).setdefault(d.name, []).append(d)

    def _bind(self, stmt: cst.CSTNode, target: cst.BaseExpression, value, how: str) -> None:
        scope = self.index.scope_of(stmt)
        seq = self.index.seq(stmt)
        if how == "assign" and isinstance(target, (cst.Tuple, cst.List)):
            for name, path in _target_names(target):
                self._add(scope, Def(name, seq, "unpack", stmt, value, path))
            for attr, path in _self_attribute_targets(target):  # `self.a, self.b = a, b`
                self._add_self_attr(stmt, Def(attr, seq, "unpack", stmt, value, path))
            return
        for name, path in _target_names(target):
            self._add(scope, Def(name, seq, how, stmt, value, path))
        # `self.x = value` inside a method: remember it on the class.
        parts = dotted_parts(target) if isinstance(target, cst.Attribute) else None
        if parts and len(parts) == 2 and parts[0] == "self":
            self._add_self_attr(stmt, Def(parts[1], seq, how, stmt, value))
        elif parts and len(parts) == 2 and how == "assign":  # `context.running = v`, `args.device = d`
            self.index.attr_stores.setdefault((scope, parts[0], parts[1]), []).append(value)

    def _add_self_attr(self, stmt: cst.CSTNode, d: Def) -> None:
        # through nested functions (a `run_epoch` closure inside a method stores on `self` too)
        info = self.index.class_of(stmt)
        if info is not None:
            info.self_attrs.setdefault(d.name, []).append(d)

    def _enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body holds ``node`` directly (not through a function)."""
        parent = self.index.parent(node)
        holder = self.index.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
        return holder if isinstance(holder, cst.ClassDef) else None

    def _in_class(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.ClassDef) for a in self.index.ancestors(node))

    # imports
    def handle_Import(self, node: cst.Import) -> None:
        self.index.imports.add(node)
        for alias in node.names:
            local = alias.asname.name if alias.asname else alias.name
            if isinstance(local, cst.Name):
                self._add(self.index.scope_of(node), Def(local.value, self.index.seq(node), "opaque", node))

    def handle_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.index.imports.add(node)

    # definitions
    def handle_ClassDef(self, node: cst.ClassDef) -> None:
        info = ClassInfo(node, [arg.value for arg in node.bases])
        self.index.class_infos[node] = info
        if isinstance(self.index.parent(node), cst.Module):
            self.index.classes[node.name.value] = info

    def handle_FunctionDef(self, node: cst.FunctionDef) -> None:
        index = self.index
        owner = self._enclosing_class(node)
        if owner is not None:
            info = index.class_infos[owner]
            info.methods[node.name.value] = node
            index.class_of_method[node] = info
        elif isinstance(index.scope_of(node), cst.Module) and not self._in_class(node):
            # Module-level, also under `if real_data:` or `try:` (nanoGPT's bench.py).
            index.functions.setdefault(node.name.value, node)
        seq = index.seq(node)
        self._add(index.scope_of(node), Def(node.name.value, seq, "opaque", node))
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            self._add(node, Def(p.name.value, seq, "param", node, func=node, param=p))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self._add(node, Def(star.name.value, seq, "star", node, func=node, param=star))
        index.returns.setdefault(node, [])

    def handle_Lambda(self, node: cst.Lambda) -> None:
        # A lambda's parameters shadow the enclosing names; we never know what they hold
        # (lambdas are not resolved as call targets), so they are opaque, not the outer binding.
        seq = self.index.seq(node)
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
            if isinstance(p, cst.Param):
                self._add(node, Def(p.name.value, seq, "opaque", node))

    def handle_Return(self, node: cst.Return) -> None:
        func = self.index.enclosing_function(node)
        if func is not None and node.value is not None:
            self.index.returns.setdefault(func, []).append(node.value)

    def handle_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(node, t.target, node.value, "assign")

    def handle_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node, node.target, node.value, "assign")

    def handle_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node, node.target, node.value, "aug")
        parts = dotted_parts(node.target) if isinstance(node.target, cst.Attribute) else None
        if parts and len(parts) == 2 and parts[0] == "self":  # `self.sum += val * n`
            self._add_self_attr(node, Def(parts[1], self.index.seq(node), "aug", node, node.value))

    def handle_NamedExpr(self, node: cst.NamedExpr) -> None:
        # PEP 572: `:=` in a comprehension binds in the enclosing function, not the comprehension.
        if isinstance(node.target, cst.Name):
            scope = self.index.frame_of(node)
            self._add(scope, Def(node.target.value, self.index.seq(node), "assign", node, node.value))

    def handle_For(self, node: cst.For) -> None:
        self.index.loops.append(node)
        self._bind(node, node.target, node.iter, "for")

    def handle_While(self, node: cst.While) -> None:
        self.index.loops.append(node)

    def handle_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node, node.target, node.iter, "for")

    def handle_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node, node.asname.name, node.item, "opaque")

    def handle_Expr(self, node: cst.Expr) -> None:
        # `model.to(device)` / `model.cuda()` as a statement only makes sense for a module,
        # which moves in place (a tensor's `.to()` result would be thrown away).
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda"):
            if isinstance(call.func.value, cst.Name):
                self._add(self.index.scope_of(node), Def(call.func.value.value, self.index.seq(node), "module-move", node))

    def handle_Call(self, node: cst.Call) -> None:
        self.index.calls.append(node)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_state" and isinstance(func.value, cst.Name) and func.value.value == "self":
            name = node.args[0].value if node.args else None
            if isinstance(name, cst.SimpleString) and isinstance(evaluated_literal(name), str):
                # a torchmetrics state: a tensor that moves with the metric (`self.correct`)
                self._add_self_attr(node, Def(evaluated_literal(name), self.index.seq(node), "state", node))
        for anc in self.index.ancestors(node):
            if type(anc) in _OWNER_TYPES:
                self.index.calls_by_owner.setdefault(anc, []).append(node)
                break


# The innermost of these around a call "owns" it: a loop's own body, not a nested loop's.
_OWNERS = (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)
_OWNER_TYPES = frozenset(_OWNERS)  # exact types: isinstance on libcst's ABCs is slow, and hot here
