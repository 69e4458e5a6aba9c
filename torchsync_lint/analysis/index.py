"""One pass over the walked module (analysis/tree.py) that indexes what the analyses need.

Scopes are functions, lambdas, comprehensions and the module, as in Python (a comprehension's
first iterable is evaluated in the enclosing scope); class bodies fold into the enclosing scope,
which is precise enough for "where did this name come from?".

Order and nesting come from the walk's preorder numbering, never from source positions:
positions are computed only for the nodes a rule reports (analysis/positions.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from torchsync_lint.analysis.imports import ImportMap, dotted_parts
from torchsync_lint.analysis.tree import Tree, innermost
from torchsync_lint.pytree import evaluated_literal

Scope = cst.Module | cst.FunctionDef | cst.Lambda | cst.ListComp | cst.SetComp | cst.DictComp | cst.GeneratorExp
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_FRAMES = (cst.FunctionDef, cst.Lambda, cst.Module)
_FRAME_TYPES = frozenset(_FRAMES)  # exact types: no subclasses of these node classes exist
_FUNCTION_TYPES = frozenset({cst.FunctionDef})

_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)


@dataclass(frozen=True)
class Def:
    """One binding of a name.

    ``how`` says how to compute the bound value:
      - "assign": ``value`` itself;
      - "unpack": element ``path`` of ``value`` (tuple targets);
      - "for": an element of iterating ``value`` (then ``path`` into it);
      - "aug": ``name <op>= value``;
      - "param": the parameter ``param`` of function ``func``;
      - "star": its `*args` / `**kwargs` parameter ``param`` (what call sites pass beyond the
        named parameters);
      - "state": a metric state `self.add_state("name", ...)` registers on the instance;
      - "opaque": an import, a def, a class, a `with ... as` target...
    """

    name: str
    seq: int  # the binding statement's place in source order (Tree.order)
    how: str
    stmt: cst.CSTNode
    value: cst.BaseExpression | None = None
    path: tuple[int, ...] = ()
    func: cst.FunctionDef | None = None
    param: cst.Param | None = None


@dataclass
class ClassInfo:
    node: cst.ClassDef
    bases: list[cst.BaseExpression]
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    self_attrs: dict[str, list[Def]] = field(default_factory=dict)  # `self.x = ...` in any method


@dataclass
class ModuleIndex:
    imports: ImportMap
    tree: Tree
    positions: object  # analysis.positions.LazyPositions: node -> CodeRange, on demand
    defs: dict[Scope, dict[str, list[Def]]] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)  # module-level functions
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    class_of_method: dict[cst.FunctionDef, ClassInfo] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)
    calls_by_owner: dict[cst.CSTNode, list[cst.Call]] = field(default_factory=dict)
    loops: list[cst.For | cst.While] = field(default_factory=list)
    returns: dict[cst.FunctionDef, list[cst.BaseExpression]] = field(default_factory=dict)
    by_type: dict[type, list[cst.CSTNode]] = field(default_factory=dict)  # every node, per node type
    class_infos: dict[cst.ClassDef, ClassInfo] = field(default_factory=dict)  # nested classes too
    # `ctx.running = v` on a name other than `self`: (scope, name, attribute) -> values stored
    attr_stores: dict[tuple[Scope, str, str], list[cst.BaseExpression]] = field(default_factory=dict)

    @property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        return self.tree.parents

    def nodes_of(self, node_type: type) -> list:
        """Every node of exactly this type, in source order."""
        return self.by_type.get(node_type, [])

    _call_targets: dict[cst.Call, cst.FunctionDef] | None = None
    _binding_resolver: object = None
    _call_sites: dict[cst.FunctionDef, list[cst.Call]] = field(default_factory=dict)
    _scopes: dict[cst.CSTNode, Scope] = field(default_factory=dict)  # scope_of, memoised
    _frames: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)  # frame_of, memoised
    _functions_of: dict[cst.CSTNode, cst.FunctionDef | None] = field(default_factory=dict)  # enclosing_function
    _subscript_stores: dict[str, list] | None = None

    def subscript_stores(self, name: str) -> list[tuple[int, cst.CSTNode, cst.Assign, cst.Subscript]]:
        """(seq, frame, assignment, target) of each `name[...] = value`, in source order (the
        value analysis asks it of every subscript it reads: gathered once per module)."""
        if self._subscript_stores is None:
            self._subscript_stores = {}
            for assign in self.nodes_of(cst.Assign):
                for t in assign.targets:
                    store = t.target
                    if type(store) is cst.Subscript and type(store.value) is cst.Name:
                        self._subscript_stores.setdefault(store.value.value, []).append((self.seq(assign), self.frame_of(assign), assign, store))
        return self._subscript_stores.get(name, [])

    def call_targets(self) -> dict[cst.Call, cst.FunctionDef]:
        """Every call whose callee is a same-module function, resolved once."""
        if self._call_targets is None:
            self._call_targets = {}
            for call in self.calls:
                target = self.resolve_function(call.func, call)
                if target is not None:
                    self._call_targets[call] = target
                    self._call_sites.setdefault(target, []).append(call)
        return self._call_targets

    def call_sites(self, func: cst.FunctionDef) -> list[cst.Call]:
        self.call_targets()
        return self._call_sites.get(func, [])

    def class_of(self, node: cst.CSTNode) -> ClassInfo | None:
        """The class whose method ``node`` is in (through nested functions): what `self` is."""
        method = self.enclosing_function(node)
        while method is not None and method not in self.class_of_method:
            method = self.enclosing_function(method)
        return self.class_of_method.get(method) if method is not None else None

    def target_of(self, call: cst.Call) -> cst.FunctionDef | None:
        """The same-module function ``call`` (a call of this module) calls, from call_targets()."""
        return self.call_targets().get(call)

    def argument_for(self, call: cst.Call, func: cst.FunctionDef, param: cst.Param) -> cst.BaseExpression | None:
        """What ``call`` (a call site of ``func``) passes for ``param``: the argument, else the
        parameter's default; None when nothing is passed or it cannot be known (`*args`/`**kwargs`
        at the call site, unless the parameter is named: `f(x=v, **kw)` cannot pass `x` twice)."""
        params = func.params
        if not any(p is param for p in params.posonly_params):  # positional-only: never by keyword
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == param.name.value:
                    return arg.value
        if any(a.star for a in call.args):
            return None
        position = param_index(func, param)
        if position is not None:
            position -= self._bound_arguments(call, func)
            positional = [a for a in call.args if a.keyword is None]
            if 0 <= position < len(positional):
                return positional[position].value
        return param.default

    def extra_arguments(self, call: cst.Call, func: cst.FunctionDef, keyword: bool) -> list[cst.BaseExpression]:
        """What ``call`` passes into ``func``'s `**kwargs` (``keyword``) or `*args`: the keyword
        arguments no named parameter takes, or the positional ones past the named ones."""
        params = func.params
        if keyword:
            named = {p.name.value for p in (*params.params, *params.kwonly_params)}
            return [a.value for a in call.args if a.keyword is not None and a.keyword.value not in named]
        count = len(params.posonly_params) + len(params.params) - self._bound_arguments(call, func)
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in positional[: max(count, 0)]):
            return []  # `f(*xs, y)`: which argument lands where is not known
        return [a.value for a in positional[max(count, 0):] if not a.star]

    def _bound_arguments(self, call: cst.Call, func: cst.FunctionDef) -> int:
        """1 when Python fills the first parameter itself (`self`/`cls` of a bound call), else 0."""
        if func not in self.class_of_method:
            return 0
        decorators = {tuple(dotted_parts(d.decorator) or ()) for d in func.decorators}
        if ("staticmethod",) in decorators:
            return 0
        if ("classmethod",) in decorators:
            return 1
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if isinstance(receiver, cst.Name) and receiver.value in self.classes:
            return 0  # `Trainer.step(trainer, metric)`: an unbound call passes `self` itself
        return 1

    def _nested_function(self, name: str, at: cst.CSTNode) -> cst.FunctionDef | None:
        """A `def name` local to a function that encloses ``at`` (timm's `_forward()`)."""
        scope = self.scope_of(at)
        while not isinstance(scope, cst.Module):
            for d in self.defs.get(scope, {}).get(name, ()):
                if isinstance(d.stmt, cst.FunctionDef) and d.stmt.name.value == name:
                    return d.stmt
            scope = self.scope_of(scope)
        return None

    # -- navigation -------------------------------------------------------------------------
    def seq(self, node: cst.CSTNode) -> int:
        """``node``'s place in source order (preorder of the walk)."""
        return self.tree.order[node]

    def line(self, node: cst.CSTNode) -> int:
        """The line ``node`` starts on (computes its position: for messages, not for ordering)."""
        return self.positions.line(node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.tree.parents.get(node)

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Is ``ancestor`` a strict ancestor of ``node``?"""
        return self.tree.inside(node, ancestor)

    def ancestors(self, node: cst.CSTNode):
        parents = self.tree.parents
        node = parents.get(node)
        while node is not None:
            yield node
            node = parents.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The innermost scope ``node`` runs in: a function, lambda, comprehension or the module.
        A comprehension's first iterable belongs to the enclosing scope, as in Python."""
        found = self._scopes.get(node)
        if found is None:
            found = self._scopes[node] = self._scope_of(node)
        return found

    def _scope_of(self, node: cst.CSTNode) -> Scope:
        # Exact type tests (libcst's classes are ABCs: isinstance is slow) and the memo of the
        # first ancestor already answered: its scope is this node's too, unless that ancestor
        # is a comprehension's `for_in`, whose iterable belongs to another scope than the rest.
        parents, memo = self.tree.parents, self._scopes
        child, anc = node, parents.get(node)
        while anc is not None:
            kind = type(anc)
            if kind in _FRAME_TYPES:
                return anc
            if kind in _COMPREHENSION_TYPES:
                first_iter = anc.for_in.iter
                if not (child is anc.for_in and (node is first_iter or self.tree.inside(node, first_iter))):
                    return anc
            elif kind is not cst.CompFor and anc in memo:
                return memo[anc]
            child, anc = anc, parents.get(anc)
        raise AssertionError("node outside the module")

    def frame_of(self, node: cst.CSTNode) -> cst.Module | cst.FunctionDef | cst.Lambda:
        """The function, lambda or module whose frame runs ``node`` (comprehensions run inline)."""
        found = innermost(self.tree.parents, self._frames, node, _FRAME_TYPES)
        if found is None:
            raise AssertionError("node outside the module")
        return found

    def binds_locally(self, name: str, at: cst.CSTNode) -> bool:
        """Does a scope around ``at``, up to its function, bind ``name`` (shadowing a builtin)?"""
        scope = self.scope_of(at)
        while True:
            if self.defs.get(scope, {}).get(name):
                return True
            if not isinstance(scope, COMPREHENSIONS):
                return False
            scope = self.scope_of(scope)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return innermost(self.tree.parents, self._functions_of, node, _FUNCTION_TYPES)

    def local_class(self, func: cst.BaseExpression) -> ClassInfo | None:
        """The class of this module that a call's callee names (`Trainer(...)`), unless a
        binding in the call's scope hides the name (`def build(Model): return Model(3)`)."""
        if type(func) is not cst.Name or func.value not in self.classes or self._bindings().reaching_defs(func):
            return None
        return self.classes[func.value]

    def resolve_function(self, func: cst.BaseExpression, at: cst.CSTNode) -> cst.FunctionDef | None:
        """The same-module function a call's callee names: `f(...)`, `self.f(...)`, or an
        instance of a class of this module called like a function (its `__call__`, or the
        `forward` that `nn.Module.__call__` runs)."""
        if isinstance(func, cst.Name):
            found = self._nested_function(func.value, at) or self.functions.get(func.value)
            if found is None and self.local_class(func) is not None:
                found = self.classes[func.value].methods.get("__init__")  # `Trainer(model, ...)`
            if found is None:
                found = self._instance_call(self._bindings().reaching_defs(func))
            return found
        parts = dotted_parts(func)
        if parts and len(parts) == 2 and parts[0] in ("self", "cls"):
            info = self.class_of(at)
            if info is not None:
                return info.methods.get(parts[1]) or self._instance_call(info.self_attrs.get(parts[1], []))
        if isinstance(func, cst.Attribute) and not func.attr.value.startswith("__"):
            # `module.training_step(batch)`: a method name only one class of this module
            # defines. Receivers rooted at an import (`torch.x`) are never ours.
            if parts and parts[0] in self.imports.aliases:
                return None
            owners = [c.methods[func.attr.value] for c in self.classes.values() if func.attr.value in c.methods]
            if len(owners) == 1:
                return owners[0]
        return None

    def instance_method(self, expr: cst.BaseExpression, names: tuple[str, ...]) -> cst.FunctionDef | None:
        """The first of ``names`` defined by the class of this module every binding of
        ``expr`` (a name or `self.x`) is an instance of: what `str(meter)` runs."""
        if isinstance(expr, cst.Name):
            defs = self._bindings().reaching_defs(expr)
        else:
            parts = dotted_parts(expr)
            info = self.class_of(expr) if parts and len(parts) == 2 and parts[0] == "self" else None
            defs = info.self_attrs.get(parts[1], []) if info is not None else []
        cls = self._instance_class(defs)
        if cls is None:
            return None
        return next((cls.methods[n] for n in names if n in cls.methods), None)

    def _instance_class(self, defs: list[Def]) -> ClassInfo | None:
        classes = set()
        for d in defs:
            made = d.value if d.how == "assign" else literal_element(d) if d.how == "unpack" else None
            value = made.func if isinstance(made, cst.Call) else None
            if value is None or self.local_class(value) is None:
                return None
            classes.add(value.value)
        return self.classes[classes.pop()] if len(classes) == 1 else None

    def _instance_call(self, defs: list[Def]) -> cst.FunctionDef | None:
        """`loss_fn(pred, y)` where every binding of `loss_fn` is `ComputeLoss(...)`, a class of
        this module: the method the call runs."""
        cls = self._instance_class(defs) if defs else None
        if cls is None:
            return None
        return cls.methods.get("__call__") or cls.methods.get("forward")

    def _bindings(self):
        if self._binding_resolver is None:
            from torchsync_lint.analysis.bindings import Bindings  # bindings builds on this module

            self._binding_resolver = Bindings(self)
        return self._binding_resolver


def param_index(func: cst.FunctionDef, param: cst.Param) -> int | None:
    """The position of a positional parameter (`self` counts); None for a keyword-only one."""
    params = [*func.params.posonly_params, *func.params.params]
    return next((i for i, p in enumerate(params) if p is param), None)


def is_none(node: cst.BaseExpression | None) -> bool:
    """Is ``node`` the literal `None`?"""
    return isinstance(node, cst.Name) and node.value == "None"


def literal_element(d: Def) -> cst.BaseExpression | None:
    """Element ``d.path`` of a tuple or list display an unpacking binds from (`a, b = x, y`)."""
    value = d.value
    for i in d.path:
        if not isinstance(value, (cst.Tuple, cst.List)) or i < 0 or i >= len(value.elements) or isinstance(value.elements[i], cst.StarredElement):
            return None
        value = value.elements[i].value
    return value


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


def build_index(tree: Tree, positions) -> ModuleIndex:
    index = ModuleIndex(ImportMap(), tree, positions)
    index.defs[tree.module] = {}
    _Indexer(index).run()
    return index
