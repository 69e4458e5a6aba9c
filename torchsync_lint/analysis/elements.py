"""What an element of a value holds: unpacking (`a, b = value`, position by position), subscripts
(`d["key"]` of a dict literal key by key, `t[i]` of a tensor) and the items of a `for` loop.
Part of ValueAnalysis (values.py), which provides ``_eval`` and ``reaching_defs``."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.kinds import DEVICE_VALUES, MODEL_KINDS, Kind, join
from torchsync_lint.pytree import evaluated_literal


class ElementKinds:
    def _element(self, value: cst.BaseExpression, path: tuple[int, ...]) -> Kind | None:
        """Kind of element ``path`` when ``value`` is unpacked (`a, b = value`)."""
        if not path:
            return self._eval(value)
        projected = self._project(value, path[0])
        if projected is not None:
            return join(self._element(v, path[1:]) if isinstance(v, cst.BaseExpression) else v for v in projected)
        k = self._eval(value)
        if k in DEVICE_VALUES:
            return Kind.DEVICE  # rows of a device tensor, or the values of a container of them
        return Kind.HOST_TENSOR if k is Kind.HOST_TENSOR else (Kind.HOST if k is Kind.HOST else Kind.UNKNOWN)

    def _project(self, value: cst.BaseExpression, position: int, depth: int = 0) -> list | None:
        """The expressions (or kinds) that element ``position`` of ``value`` may be: through
        tuple literals, names bound to them, and functions returning them. None when the
        value's shape is not known."""
        if depth > 6 or position < 0:
            return None
        if isinstance(value, (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in value.elements):
                return None
            return [value.elements[position].value] if position < len(value.elements) else None
        if isinstance(value, cst.Name):
            defs = self.reaching_defs(value)
            if len(defs) == 1 and defs[0].how == "param":
                # a tuple the callers pass, element by element (`targets[0]` of `to_device(batch)`)
                kind = self.env.param_element(defs[0].func, defs[0].param, position)
                return [kind] if kind is not None else None
            if not defs or any(d.how != "assign" or d.value is None for d in defs):
                return None
            return _gather((d.value for d in defs), lambda v: self._project(v, position, depth + 1))
        if isinstance(value, cst.Call):
            target = self.index.target_of(value)
            if target is not None:
                return _gather(self.index.returns.get(target, []), lambda r: self._project(r, position, depth + 1)) or None
            return self.call_element(value, position)
        return None

    def _subscript(self, node: cst.Subscript) -> Kind | None:
        """`d["key"]` of a dict literal is that key's value; `t[i]` of a tensor is a tensor."""
        key = _constant_key(node)
        if key is not None:
            values = self._dict_values(node.value, key)
            if values is not None:
                return join(self._eval(v) if isinstance(v, cst.BaseExpression) else v for v in values)
        if key is not None:
            stored = self._keyed_values(node, key)
            if stored is not None:
                return join(self._eval(v) for v in stored)  # `logs["lr"] = lr` ... `logs["lr"]`
        if isinstance(key, int) and not isinstance(key, bool):
            items = self._project(node.value, key)
            if items is not None:
                return join(self._eval(v) if isinstance(v, cst.BaseExpression) else v for v in items)
        base = self._eval(node.value)
        if base in MODEL_KINDS:
            return base  # `model[0]`, `list(model.children())[-1]`: a submodule, placed with it
        if base is Kind.MOVED or base is Kind.CONTAINER:
            return Kind.DEVICE  # a tensor's part, or a value a container of device tensors holds
        if base is not Kind.DEVICE and self._device_stored_into(node, key):
            return Kind.DEVICE  # `batch[k] = batch[k].to(device)` earlier in the step
        return base if base in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR) else Kind.UNKNOWN

    def _device_stored_into(self, node: cst.Subscript, key: object) -> bool:
        """Was a device value stored into this container (`batch[k] = v.to(device)`), under
        this key or any, before ``node`` reads it in the same function?"""
        if not isinstance(node.value, cst.Name):
            return False
        frame = self.index.frame_of(node)
        seq = self.index.seq(node)
        for stored_at, stored_in, assign, store in self.index.subscript_stores(node.value.value):
            if stored_at >= seq or stored_in is not frame:
                continue
            stored_key = _constant_key(store)
            if key is not None and stored_key is not None and stored_key != key:
                continue
            if self._eval(assign.value) in (Kind.DEVICE, Kind.MOVED, Kind.CONTAINER):
                return True
        return False

    def _keyed_values(self, node: cst.Subscript, key: object) -> list | None:
        """What a dict display bound here (`logs = {}`) holds under ``key`` when ``node`` reads
        it: its own entry and what this function stored under the key before (`logs["lr"] =
        lr`); None when a store or an entry has a key that is not a literal, or the dict is
        filled some other way (`logs.update(d)`), or nothing was stored under the key."""
        name = node.value
        if type(name) is not cst.Name:
            return None
        defs = self.reaching_defs(name)
        if not defs or any(d.how != "assign" or type(d.value) is not cst.Dict for d in defs):
            return None
        values: list = []
        for d in defs:
            for el in d.value.elements:
                k = _literal_key(el.key) if isinstance(el, cst.DictElement) else _UNKNOWN_KEY
                if k is _UNKNOWN_KEY:
                    return None  # `**other` or a computed key: any key
                if k == key:
                    values.append(el.value)
        frame, seq = self.index.frame_of(node), self.index.seq(node)
        for stored_at, stored_in, assign, store in self.index.subscript_stores(name.value):
            if stored_in is not frame or stored_at >= seq:
                continue
            stored_key = _constant_key(store)
            if stored_key is None:
                return None
            if stored_key == key:
                values.append(assign.value)
        if name.value in self._stores_into() and any(type(at) is cst.Call for at, _ in self._stores_into()[name.value]):
            return None  # `logs.update(...)`, `logs.setdefault(...)`: filled another way too
        return values or None

    def _dict_values(self, value: cst.BaseExpression, key: object, depth: int = 0) -> list | None:
        """The expressions (or kinds) a constant key may hold when ``value`` is a dict literal,
        a `dict(k=...)` call, a name bound only to those, or a function returning them."""
        if depth > 6:
            return None
        if isinstance(value, cst.Dict):
            found = None
            for el in value.elements:
                if not isinstance(el, cst.DictElement):
                    return None  # `**other`: any key
                k = _literal_key(el.key)
                if k is _UNKNOWN_KEY:
                    return None
                if k == key:
                    found = [el.value]
            return found if found is not None else [Kind.UNKNOWN]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" and not self.index.binds_locally("dict", value):
            if any(a.star or a.keyword is None for a in value.args):
                return None
            return [a.value for a in value.args if a.keyword.value == key] or [Kind.UNKNOWN]
        if isinstance(value, cst.Name):
            defs = self.reaching_defs(value)
            if len(defs) == 1 and defs[0].how == "star" and defs[0].param is defs[0].func.params.star_kwarg and not self._mutated(value):
                return self._keyword_passed(defs[0].func, key)  # `kwargs["batch_size"]` of `def f(**kwargs)`
            if not defs or any(d.how != "assign" or d.value is None for d in defs) or self._mutated(value):
                return None
            return _gather((d.value for d in defs), lambda v: self._dict_values(v, key, depth + 1))
        if isinstance(value, cst.Call):
            target = self.index.target_of(value)
            if target is not None:
                return _gather(self.index.returns.get(target, []), lambda r: self._dict_values(r, key, depth + 1)) or None
        return None

    def _keyword_passed(self, func: cst.FunctionDef, key: object) -> list | None:
        """What the call sites of ``func`` pass for keyword ``key`` into its `**kwargs`, when
        every call site is in this module (a `**` whose keys the code does not show passes an
        unknown value); None when not known."""
        calls = self.index.call_sites(func)
        if not calls or not isinstance(key, str) or self.env.has_callers(func):
            return None
        named = {p.name.value for p in (*func.params.params, *func.params.kwonly_params)}
        if key in named:
            return None
        found: list = []
        for call in calls:
            spread = self.index.spread_keywords(call)
            if spread is None:
                found.append(Kind.UNKNOWN)  # `f(**options())`: what it passes under ``key`` is not known
                continue
            given = {**{a.keyword.value: a.value for a in call.args if a.keyword is not None}, **spread}
            if key in given:
                found.append(given[key])
        return found or None

    def _mutated(self, name: cst.Name) -> bool:
        """Is a dict bound to ``name`` changed in place in its scope (`d[k] = v`, `d.update()`)?"""
        scope = self.index.scope_of(name)
        for n in self.index.tree.walk_subtree(scope):
            if type(n) is cst.Name and n.value == name.value:
                parent = self.index.parent(n)
                if isinstance(parent, cst.Subscript) and parent.value is n and isinstance(self.index.parent(parent), cst.AssignTarget):
                    return True
                if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in ("update", "setdefault", "__setitem__"):
                    return True
        return False

    def _iter_element(self, iterable: cst.BaseExpression, path: tuple[int, ...], depth: int = 0) -> Kind | None:
        """Kind of (part of) one item produced by ``for ... in iterable``."""
        if isinstance(iterable, cst.Name) and depth < 4:
            defs = self.reaching_defs(iterable)
            if defs and all(d.how == "assign" and isinstance(d.value, cst.Call) for d in defs):
                # `pbar = tqdm(loader)`; `for x in pbar`. Every binding: the restart idiom
                # `it = iter(loader)` before the loop and again in `except StopIteration:`
                kinds = [self._iter_element(d.value, path, depth + 1) for d in defs]
                if len(kinds) == 1 or all(k not in (None, Kind.UNKNOWN) for k in kinds):
                    return join(kinds)  # (else what the name's own kind says, below)
        if isinstance(iterable, cst.Call):
            found = self.call_iter_element(iterable, path)
            if found is not None:
                return found
        k = self._eval(iterable)
        if k is Kind.LOADER:
            return Kind.HOST_TENSOR  # CPU tensors until the loop moves them
        if k in (Kind.DEVICE_LOADER, Kind.PREPARED):
            return Kind.DEVICE  # only a prepared loader is iterated: its batches arrive on the device
        if k in MODEL_KINDS or k is Kind.MOVED:
            return Kind.UNKNOWN  # `for layer in model`: submodules
        if k in (Kind.DEVICE, Kind.HOST, Kind.HOST_TENSOR):
            return k
        if k is Kind.CONTAINER:
            # a dict's items are its keys; a list's or tuple's, the tensors it holds
            return Kind.HOST if self.is_mapping(iterable) else Kind.DEVICE
        parts = dotted_parts(iterable) if isinstance(iterable, cst.Attribute) else None
        info = self.index.class_of(iterable) if parts and len(parts) == 2 and parts[0] == "self" else None
        if info is not None:  # `for x, y in self.train_loader`: what the project stores there yields
            found = self.env.self_attribute_items(info.node, parts[1], path)
            if found is not None:
                return found
        return Kind.UNKNOWN

    def is_python_container(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a name every binding of which is a dict or list display, comprehension
        or `dict(...)`/`list(...)` call? Storing into one (`batch[key] = t.cpu()`) copies
        nothing: it is not a tensor."""
        if _is_container_display(expr, self.index) or isinstance(expr, (cst.Tuple, cst.Set, cst.SetComp)):
            return True
        if not isinstance(expr, cst.Name):
            return False
        defs = self.reaching_defs(expr)
        return bool(defs) and all(d.how == "assign" and _is_container_display(d.value, self.index) for d in defs)

    def _single_assigned_call(self, name: cst.Name) -> cst.Call | None:
        defs = self.reaching_defs(name)
        if len(defs) == 1 and defs[0].how == "assign" and isinstance(defs[0].value, cst.Call):
            return defs[0].value
        return None


_UNKNOWN_KEY = object()
_CONTAINER_DISPLAYS = (cst.Dict, cst.List, cst.DictComp, cst.ListComp)


def _is_container_display(value: cst.BaseExpression | None, index) -> bool:
    if isinstance(value, _CONTAINER_DISPLAYS):
        return True
    func = value.func if isinstance(value, cst.Call) else None
    return isinstance(func, cst.Name) and func.value in ("dict", "list") and not index.binds_locally(func.value, func)


def _literal_key(node: cst.BaseExpression | None) -> object:
    if isinstance(node, cst.SimpleString):
        return evaluated_literal(node)
    if isinstance(node, cst.Integer):
        return evaluated_literal(node)
    return _UNKNOWN_KEY


def _constant_key(node: cst.Subscript) -> object | None:
    """The key of `x["key"]` / `x[0]`, when it is one literal."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    key = _literal_key(node.slice[0].slice.value)
    return None if key is _UNKNOWN_KEY else key


def _gather(sources, resolve) -> list | None:
    """What every source resolves to, concatenated; None as soon as one is not known (each
    binding of a name, or each `return` of a function, must say)."""
    out: list = []
    for source in sources:
        part = resolve(source)
        if part is None:
            return None
        out += part
    return out
