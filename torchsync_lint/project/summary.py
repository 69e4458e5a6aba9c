"""A module's summary: what other modules of the project need to know about it, computed from
that module alone (so it can be cached by the file's content hash).

- ``functions`` / ``classes``: parameters, what each function returns, whether it runs a
  training step or a pass over a loader, which argument's items a generator yields; class
  bases, nn.Module-ness and what `__init__` stores on `self`;
- ``values``: module-level names worth knowing (a device, a loader, a model);
- ``calls``: calls of imported names (other modules' functions and classes) with what each
  argument is, and whether the call runs every step here;
- ``feeds``: what the loops that copy batches to the device (or run a model on it) iterate,
  and what is handed to accelerate / Lightning / Fabric to be placed on the device;
- ``loaders``: the DataLoaders built here;
- ``datasets``: for each of them, where its dataset comes from (a parameter, a project class or
  function of another module) and which parameters reach the arguments of its dataset's
  constructor (a transform passed in), so the view can follow a fed loader back to them.

Values are abstract values (absval.py); names of other modules stay as written (`proj.data.
make_loader`, `.engine.f`) and are resolved by the project view.
"""

from __future__ import annotations

import builtins

import libcst as cst

from torchsync_lint.analysis.images import host_float_sites
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.analysis.loaders import loaders
from torchsync_lint.analysis.metrics import metric_tracker
from torchsync_lint.knowledge import torch as tk
from torchsync_lint.project import absval
from torchsync_lint.project.describe import describe_metric
from torchsync_lint.project.view import SUMMARY_VERSION
# Imports of these never name a project module: their calls are not recorded.
_LIBRARY_ROOTS = frozenset(
    "torch numpy np math os sys time json re logging random collections itertools functools typing dataclasses "
    "argparse pathlib shutil glob copy pickle warnings datetime tqdm wandb accelerate lightning pytorch_lightning "
    "transformers torchvision torchmetrics PIL cv2 scipy sklearn pandas matplotlib yaml omegaconf hydra timm "
    "einops tensorboardX subprocess contextlib abc enum inspect traceback io csv gc".split()
)
_WRAPPERS = frozenset({"enumerate", "iter", "reversed", "zip", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "itertools.islice", "islice"})
_HANDOFF_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders", "fit", "validate", "test", "predict"})
_MAX_DEPTH = 6
# Module methods returning the module itself (placed on the device by `to`/`cuda`).
_PLACING_METHODS = frozenset({"to", "cuda", "train", "eval", "half", "float", "double", "bfloat16"})
# Tensor methods whose result is a tensor where the receiver is.
_TENSOR_METHODS = tk.TENSOR_METHODS - tk.HOST_RESULT_METHODS - tk.SHARED_METHODS


def _like(value: dict) -> dict | None:
    """A tensor computed from ``value`` when that is symbolic (a parameter, another module's
    result): it lives where ``value`` does."""
    if value.get("k") in absval.SYMBOLIC:
        return value if value.get("k") == "like" else {"k": "like", "of": value}
    return None


def summarize(analysis, relpath: str) -> dict:
    return _Summarizer(analysis, relpath).run()


def local_qualname(index, node: cst.CSTNode) -> str | None:
    """`f`, `Class`, `Class.method` for top-level definitions; None for nested ones (nothing
    outside the module can name them)."""
    if isinstance(node, cst.ClassDef):
        info = index.classes.get(node.name.value)
        return node.name.value if info is not None and info.node is node else None
    if isinstance(node, cst.FunctionDef):
        if index.functions.get(node.name.value) is node:
            return node.name.value
        info = index.class_of_method.get(node)
        if info is not None:
            owner = local_qualname(index, info.node)
            return f"{owner}.{node.name.value}" if owner else None
    return None


class _Summarizer:
    def __init__(self, analysis, relpath: str) -> None:
        self.a = analysis
        self.index = analysis.index
        self.values = analysis.values
        self.relpath = relpath
        self.loaders = loaders(analysis)
        self.metrics = metric_tracker(analysis)
        self._quals: dict[cst.CSTNode, str | None] = {}

    def run(self) -> dict:
        imports = self.index.imports
        return {
            "version": SUMMARY_VERSION,
            "path": self.relpath,
            "accelerator": self.values.uses_accelerator,
            "aliases": dict(imports.aliases),
            "stars": list(imports.star_imports),
            "functions": self._functions(),
            "classes": self._classes(),
            "values": self._module_values(),
            "calls": self._calls(),
            "feeds": self._feeds(),
            "loaders": [self.site(info.call) for info in self.loaders.loaders],
            "datasets": self._datasets(),
        }

    # -- names --------------------------------------------------------------------------------
    def qual(self, node: cst.CSTNode) -> str | None:
        if node not in self._quals:
            self._quals[node] = local_qualname(self.index, node)
        return self._quals[node]

    def ref(self, node: cst.CSTNode) -> str | None:
        qual = self.qual(node)
        return f"{self.relpath}:{qual}" if qual else None

    def site(self, call: cst.Call) -> str:
        return f"{self.relpath}@{self.index.seq(call)}"

    # -- functions and classes ----------------------------------------------------------------
    def _functions(self) -> dict:
        out = {}
        hot = self.a.hot
        for func in self.index.returns:
            qual = self.qual(func)
            if qual is None:
                continue
            params = func.params
            positional = [p.name.value for p in (*params.posonly_params, *params.params)]
            decorators = {tuple(dotted_parts(d.decorator) or ()) for d in func.decorators}
            bound = 1 if func in self.index.class_of_method and ("staticmethod",) not in decorators else 0
            returns = [self.abs_of(r) for r in self.index.returns.get(func, [])]
            out[qual] = {
                "params": positional,
                "kwonly": [p.name.value for p in params.kwonly_params],
                "star": isinstance(params.star_arg, cst.Param) or isinstance(params.star_kwarg, cst.Param),
                "bound": bound,
                "returns": absval.join_abs(returns) if returns else {"k": "host"},
                "yields": self._yielded_param(func),
                "step": hot.is_step_like(func),
                "epoch": self._runs_epoch(func),
                "callees": sorted({c for c in (self._callee(call) for call in self.index.calls_by_owner.get(func, ())) if c}),
                "line": self.index.line(func),
            }
        return out

    def _yielded_param(self, func: cst.FunctionDef) -> int | None:
        """The parameter whose items ``func`` (a generator) yields one by one, if it does:
        `def log_every(self, iterable, n): for obj in iterable: ... yield obj`."""
        yields = [n for n in self.index.tree.walk_subtree(func.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if isinstance(n, cst.Yield)]
        if not yields:
            return None
        params = [*func.params.posonly_params, *func.params.params]
        found = set()
        for y in yields:
            if not isinstance(y.value, cst.Name):
                return None
            defs = self.values.reaching_defs(y.value)
            if len(defs) != 1 or defs[0].how != "for" or defs[0].path or not isinstance(defs[0].value, cst.Name):
                return None
            loop_defs = self.values.reaching_defs(defs[0].value)
            if len(loop_defs) != 1 or loop_defs[0].how != "param":
                return None
            found.add(next(i for i, p in enumerate(params) if p is loop_defs[0].param))
        return found.pop() if len(found) == 1 else None

    def _runs_epoch(self, func: cst.FunctionDef) -> bool:
        """Does ``func`` hold a pass over a data loader (a loop the hot-loop analysis reads as
        iterating one)?"""
        hot = self.a.hot
        return any(self.index.inside(loop, func) and "data loader" in why and self.index.enclosing_function(loop) is func for loop, why in hot.hot_loops.items())

    def _classes(self) -> dict:
        out = {}
        for name, info in self.index.classes.items():
            bases = []
            for base in info.bases:
                qn = self.values.qualname(base)
                if qn is not None:
                    bases.append(qn)
                elif isinstance(base, cst.Name) and base.value in self.index.classes:
                    bases.append(f":{base.value}")  # a class of this module
            attrs = {}
            for attr, defs in info.self_attrs.items():
                found = [self.abs_of(d.value) for d in defs if d.how == "assign" and d.value is not None]
                if found:
                    attrs[attr] = absval.join_abs(found)
            out[name] = {
                "bases": bases,
                "module": self.values.is_module_class(info.node),
                "lightning": self.values.is_lightning_class(info.node),
                "attrs": attrs,
                "methods": sorted(info.methods),
                "getitem": self._getitem_converts(info),
            }
        return out

    def _module_values(self) -> dict:
        out = {}
        for name, defs in self.index.defs.get(self.a.module, {}).items():
            assigned = [self.abs_of(d.value) for d in defs if d.how == "assign" and d.value is not None]
            if assigned and len(assigned) == len(defs):
                value = absval.join_abs(assigned)
                if value["k"] != "unknown":
                    out[name] = value
        return out

    # -- calls and feeding loops ------------------------------------------------------------------
    def _callee(self, call: cst.Call) -> str | None:
        """The imported name a call calls (a function, a class, or a method of an instance of
        an imported class), when it may be the project's own."""
        func = call.func
        target = self.index.target_of(call)
        if target is not None:
            qual = self.qual(target)
            return f":{qual}" if qual else None  # this module's own function: `:Class.method`
        qn = self.values.qualname(func)
        if qn is None and isinstance(func, cst.Attribute):
            origin = self.values.origin_qualname(func.value)
            qn = f"{origin}.{func.attr.value}" if origin else self._param_receiver(func.value, func.attr.value)
        elif qn is None and isinstance(func, cst.Name):
            origin = self.values.origin_qualname(func)  # `compute_loss(p, t)`, an instance called
            qn = f"{origin}.__call__" if origin else (self._param_receiver(func, "__call__") or self._star_name(func))
        if qn is None:
            return None
        if qn.startswith("^"):
            return qn
        root = qn.split(".", 1)[0]
        return qn if qn.startswith(".") or root not in _LIBRARY_ROOTS else None

    def _calls(self) -> list[dict]:
        out = []
        hot = self.a.hot
        for call in self.index.calls:
            callee = self._callee(call)
            if callee is None:
                continue
            ctx = hot.hot_context(call)
            caller = self.index.enclosing_function(call)
            caller_ref = self.ref(caller) if caller is not None else None
            out.append(
                {
                    "callee": callee,
                    "bound": self._bound(call, callee),  # `obj.method(...)`, `obj(...)`: `self` is implicit
                    "line": self.index.line(call),
                    "seq": self.index.seq(call),
                    "caller": caller_ref,
                    "hot": "yes" if ctx is not None else ("caller" if caller_ref else "no"),
                    "gated": bool(ctx and ctx.gated),
                    "args": [self.abs_of(a.value) for a in call.args if a.keyword is None and not a.star],
                    "kwargs": {a.keyword.value: self.abs_of(a.value) for a in call.args if a.keyword is not None},
                    "star": any(a.star for a in call.args),
                }
            )
        return out

    def _star_name(self, name: cst.Name) -> str | None:
        """`*Name`: a name bound by none of this module's statements that may come from one of
        its `from m import *` (the view looks it up in those modules)."""
        if not self.index.imports.star_imports or self.values.reaching_defs(name) or hasattr(builtins, name.value):
            return None
        return f"*{name.value}"

    def _param_receiver(self, receiver: cst.BaseExpression, method: str) -> str | None:
        """`criterion(out, y)` / `model.detect(x)` where the object is a parameter: the view
        looks up what callers pass for it (`^<function ref>#<index>.<method>`)."""
        if not isinstance(receiver, cst.Name):
            return None
        defs = self.values.reaching_defs(receiver)
        if len(defs) != 1 or defs[0].how != "param":
            return None
        ref = self.ref(defs[0].func)
        params = [*defs[0].func.params.posonly_params, *defs[0].func.params.params]
        index = next((i for i, p in enumerate(params) if p is defs[0].param), None)
        return f"^{ref}#{index}.{method}" if ref is not None and index is not None else None

    def _bound(self, call: cst.Call, callee: str) -> bool:
        if callee.startswith("^"):
            return True  # a method of the object passed
        if callee.startswith(":"):
            target = self.index.target_of(call)
            return target is not None and self.index._bound_arguments(call, target) == 1  # noqa: SLF001
        return self.values.qualname(call.func) is None

    def _feeds(self) -> list[dict]:
        out = []
        for loop in self.index.loops:
            if isinstance(loop, cst.For) and self.loaders.loop_feeds_accelerator(loop):
                value = self.abs_of(self._unwrap(loop.iter))
                if value["k"] not in ("unknown", "host", "host-tensor", "device"):
                    out.append({"iter": value, "line": self.index.line(loop)})
        for call in self.index.calls:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _HANDOFF_METHODS:
                for arg in call.args:
                    value = self.abs_of(arg.value)
                    if value["k"] in ("param", "call", "sym", "loader"):
                        out.append({"iter": value, "line": self.index.line(call), "handoff": True})
        return out

    # -- datasets -------------------------------------------------------------------------------
    def _datasets(self) -> list[dict]:
        out = []
        for info in self.loaders.loaders:
            sources = [v for v in self._sources(info.dataset) if v["k"] in ("param", "call", "instance")]
            for call in self.loaders.dataset_calls(info):
                for arg in call.args:
                    sources += [v for v in self._sources(arg.value) if v["k"] == "param"]
            if sources:
                unique = {repr(sorted(v.items())): v for v in sources}
                out.append({"loader": self.site(info.call), "fed": self.loaders.feeds_accelerator(info), "sources": list(unique.values())})
        return out

    def _sources(self, expr: cst.BaseExpression | None, depth: int = 0) -> list[dict]:
        """Every value ``expr`` may come from, as abstract values: through names, `self.attr`
        (each assignment in the class), this module's helpers' returns and `Subset`-style
        wrappers. Unlike ``abs_of`` nothing is joined: a dataset that is a parameter in one
        branch and built here in the other yields both."""
        if expr is None or depth > _MAX_DEPTH:
            return []
        if isinstance(expr, cst.Name):
            out = []
            for d in self.values.reaching_defs(expr):
                if d.how == "assign" and d.value is not None:
                    out += self._sources(d.value, depth + 1)
                elif d.how == "param":  # `if transform is None: transform = ToTensor()` keeps the parameter too
                    ref = self.ref(d.func)
                    params = [*d.func.params.posonly_params, *d.func.params.params]
                    position = next((i for i, p in enumerate(params) if p is d.param), None)
                    if ref is not None and position is not None:
                        out.append({"k": "param", "fn": ref, "i": position})
            return out
        if isinstance(expr, cst.Attribute):
            parts = dotted_parts(expr)
            info = self.index.class_of(expr) if parts and len(parts) == 2 and parts[0] == "self" else None
            if info is None:
                return [self.abs_of(expr)]
            out = []
            for d in info.self_attrs.get(parts[1], []):
                if d.how == "assign" and d.value is not None:
                    out += self._sources(d.value, depth + 1)
            return out
        if isinstance(expr, cst.Call):
            target = self.index.target_of(expr)
            if target is not None and target not in self.index.class_of_method:
                out = []
                for r in self.index.returns.get(target, []):
                    out += self._sources(r, depth + 1)
                return out
            out = [self.abs_of(expr)]
            for wrapped in self.loaders._wrapped_datasets(expr):  # noqa: SLF001 - `Subset(ds, idx)`
                out += self._sources(wrapped, depth + 1)
            return out
        return [self.abs_of(expr)]

    def _getitem_converts(self, info) -> bool | None:
        """Does the class's own `__getitem__` turn images into floats (None: it has none)?"""
        method = info.methods.get("__getitem__") or info.methods.get("__getitems__")
        return bool(host_float_sites(self.a, method)) if method is not None else None

    def _unwrap(self, expr: cst.BaseExpression, depth: int = 0) -> cst.BaseExpression:
        """`enumerate(tqdm(loader))` -> `loader`; `pbar = tqdm(loader)` -> `loader`."""
        if depth > _MAX_DEPTH:
            return expr
        if isinstance(expr, cst.Name):
            call = self.values._single_assigned_call(expr)  # noqa: SLF001
            if call is not None and self._wrapper_name(call) is not None:
                return self._unwrap(call, depth + 1)
        if isinstance(expr, cst.Call) and self._wrapper_name(expr) is not None:
            positional = [a.value for a in expr.args if a.keyword is None and not a.star]
            if positional:
                return self._unwrap(positional[0], depth + 1)
        return expr

    def _wrapper_name(self, call: cst.Call) -> str | None:
        name = self.values.qualname(call.func) or (call.func.value if isinstance(call.func, cst.Name) else None)
        return name if name in _WRAPPERS else None

    # -- abstract values --------------------------------------------------------------------------
    def abs_of(self, expr: cst.BaseExpression, depth: int = 0) -> dict:
        if depth > _MAX_DEPTH:
            return absval.of_kind(self.values.kind(expr))
        found = self.loaders.loaders_of(expr)
        if found:
            return {"k": "loader", "sites": sorted({self.site(info.call) for info in found})}
        sites = self.metrics.sites_of(expr) if self.metrics.sites else []
        if sites:
            described = {repr(describe_metric(self.metrics, s)) for s in sites}
            if len(described) == 1:
                return describe_metric(self.metrics, sites[0])
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        if isinstance(expr, cst.BinaryOperation):
            sides = [self.abs_of(expr.left, depth + 1), self.abs_of(expr.right, depth + 1)]
            symbolic = [v for v in sides if v.get("k") in absval.SYMBOLIC]
            if len(symbolic) == 1 and all(v in symbolic or v.get("k") in ("host", "host-tensor") for v in sides):
                return _like(symbolic[0])  # `x * scale` of a parameter
        if isinstance(expr, (cst.Tuple, cst.List)) and not any(isinstance(el, cst.StarredElement) for el in expr.elements):
            return {"k": "tuple", "items": [self.abs_of(el.value, depth + 1) for el in expr.elements]}
        if isinstance(expr, cst.Dict) and all(isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) for el in expr.elements):
            return {"k": "dict", "items": {el.key.evaluated_value: self.abs_of(el.value, depth + 1) for el in expr.elements}}
        if isinstance(expr, cst.Attribute):
            qn = self.values.qualname(expr)
            if qn is not None and not qn.startswith("torch."):
                return {"k": "sym", "name": qn}
            parts = dotted_parts(expr)
            if parts and len(parts) == 2 and parts[0] == "self":
                info = self.index.class_of(expr)
                defs = info.self_attrs.get(parts[1], []) if info is not None else []
                found_values = [self.abs_of(d.value, depth + 1) for d in defs if d.how == "assign" and d.value is not None]
                if found_values and len(found_values) == len(defs):
                    return absval.join_abs(found_values)
        return self._kind_or_device(expr)

    def _kind_or_device(self, expr: cst.BaseExpression) -> dict:
        kind = self.values.kind(expr)
        if kind is Kind.HOST and self._is_device_spec(expr):
            where = self.values.device_of(expr)
            if where in ("cpu", "accelerator"):
                return {"k": "devspec", "where": where}
        return absval.of_kind(kind)

    def _is_device_spec(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return (self.values.qualname(expr.func) or "") == "torch.device"
        if isinstance(expr, cst.SimpleString):
            return self.values.device_of(expr) is not None
        return False

    def _name(self, expr: cst.Name, depth: int) -> dict:
        defs = self.values.reaching_defs(expr)
        if not defs:
            qn = self.values.qualname(expr) or self._star_name(expr)
            return {"k": "sym", "name": qn} if qn is not None else absval.UNKNOWN
        if len(defs) == 1 and defs[0].how == "param":
            ref = self.ref(defs[0].func)
            params = [*defs[0].func.params.posonly_params, *defs[0].func.params.params]
            position = next((i for i, p in enumerate(params) if p is defs[0].param), None)
            if ref is not None and position is not None:
                return {"k": "param", "fn": ref, "i": position}
            return self._kind_or_device(expr)
        found = []
        for d in defs:
            if d.how == "assign" and d.value is not None:
                found.append(self.abs_of(d.value, depth + 1))
            elif d.how == "unpack" and d.value is not None and len(d.path) == 1:
                found.append(absval.element(self.abs_of(d.value, depth + 1), d.path[0]))
            elif d.how == "aug" and isinstance(d.stmt, cst.AugAssign):
                found.append(_like(self.abs_of(d.stmt.target, depth + 1)) or self._kind_or_device(expr))  # `rt /= world_size`
            elif d.how == "for" and not d.path and d.value is not None:
                inner = self.abs_of(self._unwrap(d.value), depth + 1)
                batch = self.loaders._is_batch_loop(d.stmt)  # noqa: SLF001 - a per-step loop's items are batches
                if inner["k"] in ("param", "call", "sym", "loader"):
                    found.append({"k": "item", "of": inner, "batch": batch})
                else:
                    found.append(absval.of_kind(Kind.HOST_TENSOR) if batch and inner["k"] == "unknown" else self._kind_or_device(expr))
            else:
                return self._kind_or_device(expr)
        return absval.join_abs(found)

    def _call(self, expr: cst.Call, depth: int) -> dict:
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PLACING_METHODS and self.values.qualname(func) is None:
            receiver = self.abs_of(func.value, depth + 1)
            if receiver.get("k") == "instance":
                return {**receiver, "placed": receiver.get("placed") or func.attr.value in ("to", "cuda")}  # `model.to(device)`
        if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS and self.values.qualname(func) is None:
            derived = _like(self.abs_of(func.value, depth + 1))  # `tensor.clone()` of a parameter
            if derived is not None:
                return derived
        callee = self._callee(expr)
        if callee is not None and not callee.startswith(":"):
            return {"k": "call", "fn": callee, "kind": self.values.kind(expr).value}
        target = self.index.target_of(expr)
        if target is not None and target.name.value not in ("__init__", "forward", "__call__"):
            returns = self.index.returns.get(target, [])
            return absval.join_abs([self.abs_of(r, depth + 1) for r in returns]) if returns else {"k": "host"}
        if isinstance(expr.func, cst.Name) and expr.func.value in self.index.classes:
            info = self.index.classes[expr.func.value]
            return {"k": "instance", "cls": f"{self.relpath}:{expr.func.value}", "module": self.values.is_module_class(info.node)}
        qn = self.values.qualname(expr.func)
        kind = self.values.kind(expr)
        if qn is not None and kind is Kind.UNKNOWN:
            return {"k": "object", "origin": qn}  # `SummaryWriter(...)`: a library object
        return self._kind_or_device(expr)
