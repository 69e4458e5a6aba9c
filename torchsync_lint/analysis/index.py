"""What one pass over the walked module (analysis/tree.py, analysis/indexer.py) indexes for
the analyses, and the questions they ask of it.

Scopes are functions, lambdas, comprehensions and the module, as in Python (a comprehension's
first iterable is evaluated in the enclosing scope); class bodies fold into the enclosing scope,
which is precise enough for "where did this name come from?".

Order and nesting come from the walk's preorder numbering, never from source positions:
positions are computed only for the nodes a rule reports (analysis/positions.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from torchsync_lint.analysis import dispatch
from torchsync_lint.analysis.imports import ImportMap, dotted_parts
from torchsync_lint.analysis.tree import Tree, innermost
from torchsync_lint.knowledge.torch import MODEL_METHODS_RETURNING_MODEL, MODULE_METHODS, TENSOR_METHODS
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
    _more_targets: list[tuple[cst.Call, cst.FunctionDef]] = field(default_factory=list)  # overrides
    _subclasses: dict[int, list] = field(default_factory=dict)  # dispatch.subclasses, memoised per class
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
                    for other in self._overrides(call.func, call, target):
                        self._more_targets.append((call, other))
                        self._call_sites.setdefault(other, []).append(call)
        return self._call_targets

    def call_edges(self) -> list[tuple[cst.Call, cst.FunctionDef]]:
        """Every (call, function it may run) of this module: call_targets(), and the other
        subclass overrides `self.name(...)` may run (dispatch.py)."""
        return [*self.call_targets().items(), *self._more_targets]

    def _overrides(self, func: cst.BaseExpression, at: cst.CSTNode, target: cst.FunctionDef) -> list[cst.FunctionDef]:
        parts = dotted_parts(func)
        if not (parts and len(parts) == 2 and parts[0] in ("self", "cls")):
            return []
        info = self.class_of(at)
        return [f for f in dispatch.dispatch(self, info, parts[1]) if f is not target] if info is not None else []

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
        by_keyword = not any(p is param for p in params.posonly_params)  # positional-only: never by keyword
        if by_keyword:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == param.name.value:
                    return arg.value
        spread = self.spread_keywords(call)  # once: it may look up a `**kw` binding
        if by_keyword and spread is not None and param.name.value in spread:
            return spread[param.name.value]
        if spread is None or any(a.star == "*" for a in call.args):
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
            spread = self.spread_keywords(call) or {}
            given = [(a.keyword.value, a.value) for a in call.args if a.keyword is not None] + list(spread.items())
            return [value for name, value in given if name not in named]
        count = len(params.posonly_params) + len(params.params) - self._bound_arguments(call, func)
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in positional[: max(count, 0)]):
            return []  # `f(*xs, y)`: which argument lands where is not known
        return [a.value for a in positional[max(count, 0):] if not a.star]

    def spread_keywords(self, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
        """The keyword arguments a call's `**` arguments pass, where the code shows them:
        `f(**{"model": model})`, `f(**dict(model=model))`, or `f(**kw)` with `kw` bound once
        to one of those and never stored into (`kw["x"] = ...`). {} without a `**`; None when
        a `**` argument's keys cannot be read."""
        found: dict[str, cst.BaseExpression] = {}
        for arg in call.args:
            if arg.star != "**":
                continue
            items = dict_display_items(arg.value)
            if items is None and type(arg.value) is cst.Name:
                defs = self._bindings().reaching_defs(arg.value)
                if len(defs) == 1 and defs[0].how == "assign" and not self.subscript_stores(arg.value.value):
                    items = dict_display_items(defs[0].value)
            if items is None:
                return None
            found.update(items)
        return found

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
                found = dispatch.lookup(self, self.classes[func.value], "__init__")  # `Trainer(model, ...)`
            if found is None:
                found = self._instance_call(self._bindings().reaching_defs(func))
            return found
        parts = dotted_parts(func)
        if parts and len(parts) == 2 and parts[0] in ("self", "cls"):
            info = self.class_of(at)
            if info is not None:
                methods = dispatch.dispatch(self, info, parts[1])
                if methods:  # the method this class runs, else the one override a subclass has
                    own = dispatch.lookup(self, info, parts[1])
                    return own if own in methods else methods[0]
                return self._instance_call(info.self_attrs.get(parts[1], []))
        if isinstance(func, cst.Attribute) and not func.attr.value.startswith("__"):
            # `module.training_step(batch)`: a method name only one class of this module
            # defines. Receivers rooted at an import (`torch.x`) are never ours.
            if parts and parts[0] in self.imports.aliases:
                return None
            method = func.attr.value
            if method in MODULE_METHODS or method in TENSOR_METHODS:
                # every torch module has `forward` (every tensor `to`...): `self.rpn.forward(x)`
                # runs this module's method only when the receiver is one of its instances
                defs = self._receiver_defs(func.value)
                cls = self._instance_class(defs) if defs else None
                return dispatch.lookup(self, cls, method) if cls is not None else None
            owners = [c.methods[method] for c in self.classes.values() if method in c.methods]
            if len(owners) == 1:
                return owners[0]
        return None

    def _receiver_defs(self, expr: cst.BaseExpression) -> list[Def]:
        """The bindings of a name, or the stores to a field (`self.net`, `trainer.net`)."""
        if type(expr) is cst.Name:
            return self._bindings().reaching_defs(expr)
        return self.field_defs(expr) or []

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
        return next((m for m in (dispatch.lookup(self, cls, n) for n in names) if m is not None), None)

    def field_defs(self, expr: cst.BaseExpression) -> list[Def] | None:
        """The stores to the field ``expr`` reads: `self.x` in a method (its class's, else a
        base's), or `obj.x` where every binding of the name `obj` is an instance of one class
        of this module (`trainer = Trainer(loader, ...)`; `trainer.loader`). None when ``expr``
        is no such field."""
        parts = dotted_parts(expr) if type(expr) is cst.Attribute else None
        if not parts or len(parts) != 2:
            return None
        if parts[0] == "self":
            info = self.class_of(expr)
        else:
            defs = self._bindings().reaching_defs(expr.value) if type(expr.value) is cst.Name else []
            info = self._instance_class(defs) if defs else None
        return dispatch.field_stores(self, info, parts[1]) if info is not None else None

    def _instance_class(self, defs: list[Def], depth: int = 0) -> ClassInfo | None:
        """The one class of this module every binding makes an instance of: `Net(...)`, also
        placed or switched on the way (`Net(...).to(device)`, `.cuda()`, `.eval()`: the same
        object), and so is a name rebound to itself placed (`net = net.to(device)`) or another
        name's object (`ema = net`); a `net.to(device)` statement rebinds nothing."""
        classes = set()
        for d in self.through_moves(defs):
            made = d.value if d.how == "assign" else literal_element(d) if d.how == "unpack" else None
            while isinstance(made, cst.Call) and type(made.func) is cst.Attribute and made.func.attr.value in MODEL_METHODS_RETURNING_MODEL:
                made = made.func.value
            if type(made) is cst.Name and depth < 4:
                earlier = self._bindings().reaching_defs(made)  # `net = net.to(device)`: the object it placed
                info = self._instance_class(earlier, depth + 1) if earlier else None
                if info is None:
                    return None
                classes.add(info.node.name.value)
                continue
            value = made.func if isinstance(made, cst.Call) else None
            if value is None or self.local_class(value) is None:
                return None
            classes.add(value.value)
        return self.classes[classes.pop()] if len(classes) == 1 else None

    def through_moves(self, defs: list[Def], depth: int = 0) -> list[Def]:
        """``defs`` with each `net.to(device)` statement replaced by the bindings of `net` it
        moves (the same object, placed)."""
        out = []
        for d in defs:
            if d.how != "module-move":
                out.append(d)
            elif depth < 4:  # (the indexer makes one only of a `name.to(...)` statement)
                out += self.through_moves(self._bindings().reaching_defs(d.stmt.value.func.value), depth + 1)
            else:
                return []  # a chain of moves too long to follow: no class known
        return out

    def _instance_call(self, defs: list[Def]) -> cst.FunctionDef | None:
        """`loss_fn(pred, y)` where every binding of `loss_fn` is `ComputeLoss(...)`, a class of
        this module: the method the call runs."""
        cls = self._instance_class(defs) if defs else None
        if cls is None:
            return None
        return dispatch.lookup(self, cls, "__call__") or dispatch.lookup(self, cls, "forward")

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


def dict_display_items(node: cst.BaseExpression | None) -> dict[str, cst.BaseExpression] | None:
    """{key: value} of `{"a": x, "b": y}` or `dict(a=x, b=y)` with literal string keys; None
    for anything else (a `**` inside, a computed key, positional arguments to `dict`)."""
    if isinstance(node, cst.Dict):
        out = {}
        for el in node.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            key = evaluated_literal(el.key)
            if not isinstance(key, str):
                return None
            out[key] = el.value
        return out
    if isinstance(node, cst.Call) and type(node.func) is cst.Name and node.func.value == "dict":
        if any(a.keyword is None or a.star for a in node.args):
            return None
        return {a.keyword.value: a.value for a in node.args}
    return None
