"""Where TSL304 (``HostFloatNormalization``, input_pipeline_tensors.py) looks for float
conversions that a dataset feeding the device runs on the host: the transform pipelines it is
built with, its class's `__getitem__` (and the module functions that calls), and, with a project
view, datasets that other modules feed to the device. A mixin of the rule, which provides
``analysis`` and ``_class_calls``; what a conversion looks like is in analysis/images.py.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.images import drop_undone, host_float_sites, is_float_converter, is_normalize

_MAX_WALK = 6
_NESTED_FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_TRANSFORM_ATTRIBUTES = ("transform", "transforms")  # what torchvision's datasets apply in `__getitem__`


class HostFloatSources:
    def _fed_from_elsewhere(self, found: dict, done: set[int]) -> None:
        """What other modules of the project feed to the device: arguments of this module's calls
        that become (part of) a dataset a fed loader reads there (`get_loaders(transform=T)`), and
        this module's dataset classes and the functions their `__getitem__` calls."""
        env = self.analysis.env
        for call in self.analysis.index.calls if env.passes_fed_dataset_arguments() else ():
            for arg in env.fed_dataset_arguments(call):
                calls = self._calls_in(arg, 0, set())
                self._pipeline(calls, [], found, normalize_alone=False)  # the dataset is elsewhere: unknown
                for dataset_call in calls:
                    if self._local_class(dataset_call) is not None and id(dataset_call) not in done:
                        done.add(id(dataset_call))
                        self._transforms(dataset_call, found)
        module_defs = self.analysis.index.defs.get(self.analysis.module, {})
        for name in env.fed_module_values():  # `TRAIN_TRANSFORMS = Compose([...])`, read elsewhere
            for d in module_defs.get(name, ()):
                if d.how == "assign" and d.value is not None:
                    calls = self._calls_in(d.value, 0, set())
                    self._pipeline(calls, [], found, normalize_alone=False)
                    for dataset_call in calls:
                        if self._local_class(dataset_call) is not None and id(dataset_call) not in done:
                            done.add(id(dataset_call))
                            self._transforms(dataset_call, found)
        for info in self.analysis.index.class_infos.values():
            if env.dataset_class_fed(info.node):
                self._dataset_class(info.node, found, [])
        for func in self.analysis.index.returns:
            if env.function_feeds_dataset(func):
                for n in host_float_sites(self.analysis, func, depth=0):
                    found.setdefault(n, [])
    # -- transform pipelines ------------------------------------------------------------------
    def _transforms(self, dataset_call: cst.Call, found: dict) -> None:
        calls: list[cst.Call] = []
        for value in [a.value for a in dataset_call.args] + self._stored_transforms(dataset_call):
            calls += self._calls_in(value, 0, set())
        cls = self._local_class(dataset_call)
        if cls is not None:
            self._dataset_class(cls, found, calls)
        else:
            # a project class whose `__getitem__` makes the floats: reported there, not its Normalize
            inside = self.analysis.env.dataset_class_converts(dataset_call, self.analysis.values)
            self._pipeline(calls, [], found, normalize_alone=not inside)

    def _stored_transforms(self, dataset_call: cst.Call) -> list[cst.BaseExpression]:
        """`ds.transform = Compose([...])` after `ds = ImageFolder(root)`, in the same scope:
        the pipeline the dataset's `__getitem__` reads, set after it was built."""
        index = self.analysis.index
        stmt = index.parent(dataset_call)
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name)):
            return []
        name, scope = stmt.targets[0].target.value, index.scope_of(stmt)
        return [v for attr in _TRANSFORM_ATTRIBUTES for v in index.attr_stores.get((scope, name, attr), ())]

    def _dataset_class(self, cls: cst.ClassDef, found: dict, arg_calls: list[cst.Call]) -> None:
        """A dataset class of this module: converters anywhere in it (a transform built in
        `__init__`) or in the arguments it was built with, and its `__getitem__` arithmetic."""
        if cls not in self._class_calls:
            self._class_calls[cls] = [n for n in self.analysis.tree.walk_subtree(cls) if isinstance(n, cst.Call)]
        self._pipeline(arg_calls + self._class_calls[cls], self._getitem_sites(cls), found, normalize_alone=True)

    def _pipeline(self, calls: list[cst.Call], sites: list[cst.CSTNode], found: dict, normalize_alone: bool) -> None:
        """Converters among ``calls`` and the float arithmetic ``sites``; `Normalize` when it is
        the only float step (the floats came from a dataset we cannot see) and
        ``normalize_alone`` says that is worth reporting."""
        converters = drop_undone(self.analysis, [c for c in calls if is_float_converter(self.analysis, c) and not self._written_into_a_tensor(c)], calls)
        normalize = [c for c in calls if is_normalize(self.analysis, c)]
        for c in converters:
            found.setdefault(c, normalize)
        for n in sites:
            if not (isinstance(n, cst.Call) and self._written_into_a_tensor(n)):
                found.setdefault(n, [])
        if normalize_alone and not converters and not sites:
            for c in normalize:
                found.setdefault(c, [c])

    def _written_into_a_tensor(self, converter: cst.Call) -> bool:
        """`targets[:, 1:] = ToTensor()(boxes)`: the converted values are written into a tensor
        that exists already, whose dtype (not the conversion's) is what the loader copies."""
        index = self.analysis.index
        node, parent = converter, index.parent(converter)
        if isinstance(parent, cst.Call) and parent.func is node:  # `ToTensor()(x)`: the transform applied
            node, parent = parent, index.parent(parent)
        return isinstance(parent, cst.Assign) and parent.value is node and all(isinstance(t.target, cst.Subscript) for t in parent.targets)

    def _calls_in(self, expr: cst.BaseExpression, depth: int, seen: set[int]) -> list[cst.Call]:
        """Calls inside an argument expression, following local names (`transform = Compose(...)`)."""
        if depth > _MAX_WALK or id(expr) in seen:
            return []
        seen.add(id(expr))
        out: list[cst.Call] = []
        index = self.analysis.index
        for n in self.analysis.tree.walk_subtree(expr, _NESTED_FUNCTIONS):
            if isinstance(n, cst.Call):
                out.append(n)
                target = index.target_of(n)
                if target is not None and target not in index.class_of_method:
                    for r in index.returns.get(target, []):  # `transform = build_transform(cfg)`
                        out += self._calls_in(r, depth + 1, seen)
            elif isinstance(n, cst.Name):
                for d in self.analysis.values.reaching_defs(n):
                    if d.how == "assign" and d.value is not None:
                        out += self._calls_in(d.value, depth + 1, seen)
                        if isinstance(d.value, cst.List):  # `t = []` ... `t.append(ToTensor())`
                            for added in self._added_to(d):
                                out += self._calls_in(added, depth + 1, seen)
            elif isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self":
                info = self.analysis.index.class_of(n)  # `transform=self.transform`, set in `__init__`
                for d in info.self_attrs.get(n.attr.value, []) if info is not None else []:
                    if d.how == "assign" and d.value is not None:
                        out += self._calls_in(d.value, depth + 1, seen)
        return out

    def _added_to(self, d) -> list[cst.BaseExpression]:
        """What `name.append(x)` / `.extend(xs)` / `.insert(i, x)` add to the list ``d`` binds,
        in the scope that binds it."""
        scope = self.analysis.index.scope_of(d.stmt)
        out = []
        for call in self.analysis.index.calls:
            func = call.func
            if (
                isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "insert")
                and isinstance(func.value, cst.Name) and func.value.value == d.name and call.args
                and self.analysis.index.scope_of(call) is scope
            ):
                out.append(call.args[-1].value)
        return out

    # -- Dataset.__getitem__ ----------------------------------------------------------------------
    def _local_class(self, call: cst.Call) -> cst.ClassDef | None:
        if isinstance(call.func, cst.Name) and call.func.value in self.analysis.index.classes:
            return self.analysis.index.classes[call.func.value].node
        return None

    def _getitem_sites(self, cls: cst.ClassDef) -> list[cst.CSTNode]:
        """Float conversions of the `__getitem__` a class has (or inherits from a class of this
        module), and of the module's functions it calls."""
        info = self.analysis.index.class_infos.get(cls)
        seen = 0
        while info is not None and seen < 5:
            method = info.methods.get("__getitem__") or info.methods.get("__getitems__")
            if method is not None:
                if method not in self._class_calls:  # reused as a per-method memo
                    self._class_calls[method] = host_float_sites(self.analysis, method)
                return self._class_calls[method]
            bases = [b.value for b in info.node.bases if isinstance(b.value, cst.Name)]
            info = self.analysis.index.classes.get(bases[0].value) if bases else None
            seen += 1
        return []
