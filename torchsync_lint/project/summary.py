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
make_loader`, `.engine.f`) and are resolved by the project view. What a function returns and
what a call passes (with a few other fields) may be deferred: computed when the view first
reads them (project/deferred.py).
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import trainer_loggers
from torchsync_lint.analysis.images import host_float_sites
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import param_index
from torchsync_lint.analysis.loader_datasets import calls_nothing, items_on_device
from torchsync_lint.analysis.loaders import argument, loaders
from torchsync_lint.analysis.masks import mask_evidence
from torchsync_lint.analysis.metrics import metric_tracker
from torchsync_lint.analysis.kinds import Kind
from torchsync_lint.knowledge import ignite, libraries, transformers
from torchsync_lint.knowledge import torch as tk
from torchsync_lint.knowledge.python import ATTRIBUTE_DICTS
from torchsync_lint.project import absval, deferred
from torchsync_lint.project.abstract import AbstractValues
from torchsync_lint.project.callees import CalleeNames
from torchsync_lint.project.view import SUMMARY_VERSION


def unknown_field(field: str, kind: str = "fn"):
    """What a deferred field is when it cannot be computed (project/deferred.py)."""
    if kind == "class":
        return None  # (an attribute with no value: absent)
    if field.startswith(("args.", "kwargs.")):
        return {"k": "unknown"}
    # (silent: not per step, a whole pass where that keeps a call from counting as per step)
    silent = {"step": False, "epoch": True, "hot": "no", "gated": False, "loop": None, "needs": None, "literals": [], "mask": None, "engines": []}
    return {"returns": {"k": "unknown"}, "yielded": None, "forwards": [], "line": 0, "args": [], "kwargs": {}, **silent}[field]


# A call record's fields that say whether it runs per step (Summarizer._per_step).
_PER_STEP_FIELDS = frozenset({"hot", "gated", "loop", "needs"})
# What a fed loader's dataset (or its transform) may come from that another module decides.
_DATASET_SOURCES = frozenset({"param", "call", "instance", "sym", "elem", "vcall"})
_HANDOFF_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders", "fit", "validate", "test", "predict"})


def _may_name_project_method(method: str) -> bool:
    """A method name torch's tensors and modules do not have (`update`, `act`): only such a
    call on an object of unknown kind may run a project class's method."""
    return method not in tk.TENSOR_METHODS and method not in tk.MODULE_METHODS


def summarize(analysis, relpath: str, defer=None) -> dict:
    """``analysis``'s summary, every field computed; with ``defer(kind, key)`` giving a record's
    ``field -> value``, the fields of project/deferred.py are computed on first read instead."""
    return Summarizer(analysis, relpath, defer).run()


class Summarizer:
    def __init__(self, analysis, relpath: str, defer=None) -> None:
        self._defer = defer
        self._by_key: dict | None = None
        self._epoch_functions: set | None = None  # functions holding a loop over a loader
        self._per_step_of: dict[cst.Call, dict] = {}  # call -> its per-step fields (_per_step)
        self.a = analysis
        self.index = analysis.index
        self.values = analysis.values
        self.relpath = relpath
        self.loaders = loaders(analysis)
        self.metrics = metric_tracker(analysis)
        self.names = CalleeNames(analysis, relpath)
        self.abstract = AbstractValues(analysis, self.names, self.loaders, self.metrics)
        self.abs_of = self.abstract.abs_of
        self.qual, self.ref, self.site = self.names.qual, self.names.ref, self.names.site

    def run(self) -> dict:
        imports = self.index.imports
        return {
            "version": SUMMARY_VERSION,
            "path": self.relpath,
            "accelerator": self.values.uses_accelerator,
            "metrics": bool(self.metrics.sites),  # builds torchmetrics metrics (only such a module describes one)
            "aliases": dict(imports.aliases),
            "stars": list(imports.star_imports),
            "functions": self._functions(),
            "classes": self._classes(),
            "values": self._module_values(),
            "registered": self._registered(),
            "calls": self._calls(),
            "feeds": self._feeds(),
            "loaders": [self.site(info.call) for info in self.loaders.loaders],
            "datasets": self._datasets(),
            "trainer_models": self._trainer_models(),
            "lightning_loggers": trainer_loggers.module_logger_states(self.a),
            "dict_attrs": self._dict_attrs(),
        }

    def _dict_attrs(self) -> list[str]:
        """The keys of the attribute dicts this module builds (`Munch(generator=g)`): names a
        call of an object may run as an item (`nets.generator(x)`) rather than a method."""
        qualname = self.values.qualname
        return sorted({a.keyword.value for call in self.index.calls if qualname(call.func) in ATTRIBUTE_DICTS for a in call.args if a.keyword is not None})

    # -- functions and classes ----------------------------------------------------------------
    def _functions(self) -> dict:
        out = {}
        for func in self.index.returns:
            qual = self.qual(func)
            if qual is None:
                continue
            params = func.params
            positional = [p.name.value for p in (*params.posonly_params, *params.params)]
            decorators = {tuple(dotted_parts(d.decorator) or ()) for d in func.decorators}
            bound = 1 if func in self.index.class_of_method and ("staticmethod",) not in decorators else 0
            fields = {
                "params": positional,
                "kwonly": [p.name.value for p in params.kwonly_params],
                "star": isinstance(params.star_arg, cst.Param) or isinstance(params.star_kwarg, cst.Param),
                "bound": bound,
                "yields": self._yielded_param(func),
                "callees": sorted({c for c in (self.names.callee(call) for call in self.index.calls_by_owner.get(func, ())) if c}),
            }
            out[qual] = self._record(fields, "fn", qual, deferred.FUNCTION_FIELDS)
        return out

    def _function_field(self, func: cst.FunctionDef, field: str):
        if field == "returns":
            returns = [self.abs_of(r) for r in self.index.returns.get(func, [])]
            return absval.join_abs(returns) if returns else {"k": "host"}
        if field == "yielded":  # what a generator's items are (`__iter__` of a prefetcher)
            return self._yielded(func)
        if field == "step":
            return self.a.hot.is_step_like(func)
        if field == "epoch":
            return self._runs_epoch(func)
        if field == "line":
            return self.index.line(func)
        if field == "mask":  # returns a bool/uint8 tensor (TSL105's evidence for `x[f(...)]`)
            return mask_evidence(self.a).function_returns(func)
        if field == "engines":
            return self._engine_params(func)
        return self._called_params(func)  # "forwards"

    def _record(self, fields: dict, kind: str, key, names: tuple[str, ...]) -> dict:
        """``fields`` with the deferred ``names``: computed on first read when the summary
        defers them, else now (project/deferred.py)."""
        if self._defer is not None:
            return deferred.DeferredRecord(fields, names, self._defer(kind, key))
        return {**fields, **{name: self.deferred_field(kind, key, name) for name in names}}

    def deferred_field(self, kind: str, key, field: str):
        """One deferred field: of the function ``key`` (its qualified name; kind "fn"), of
        the call ``key`` (its seq; kind "call") or of the class ``key`` (kind "class": the
        field is an attribute, its value None when it has none). A field that cannot be
        computed is unknown (a pathological expression), never a crash, whichever way it is
        asked."""
        if self._by_key is None:
            self._by_key = {("fn", self.qual(f)): f for f in self.index.returns}
            self._by_key.update((("call", self.index.seq(c)), c) for c in self.index.calls)
            self._by_key.update((("class", name), info) for name, info in self.index.classes.items())
        node = self._by_key.get((kind, key))
        try:
            if node is None:
                raise LookupError(key)
            if kind == "class":
                return self._attr_value(node, field)
            return self._function_field(node, field) if kind == "fn" else self._call_field(node, field)
        except (LookupError, ValueError, RecursionError, MemoryError):
            return unknown_field(field, kind)

    def _yielded_param(self, func: cst.FunctionDef) -> int | None:
        """The position of the parameter whose items ``func`` (a generator) yields."""
        param = self.values.yielded_param(func)
        return param_index(func, param) if param is not None else None

    def _yielded(self, func: cst.FunctionDef) -> dict | None:
        """The join of what a generator yields, when it yields values (None otherwise)."""
        yields = [n.value for n in self.index.tree.yields(func) if isinstance(n.value, cst.BaseExpression)]
        return absval.join_abs([self.abs_of(y) for y in yields]) if yields else None

    def _called_params(self, func: cst.FunctionDef) -> list[int]:
        """The positions of the parameters ``func`` calls (`model(x)` of `def sample(model, x)`),
        anywhere in its body: a caller that hands it a model runs that model's forward."""
        found = set()
        for node in self.index.tree.walk_subtree(func.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                defs = self.values.reaching_defs(node.func)
                if defs and all(d.how == "param" and d.func is func for d in defs):
                    position = param_index(func, defs[0].param)
                    if position is not None:
                        found.add(position)
        return sorted(found)

    def _engine_params(self, func: cst.FunctionDef) -> list[list[int]]:
        """[position, batch position] for each parameter ``func`` hands an engine that runs it
        once per batch (class_queries.engine_params): the function a caller passes there runs
        every batch, its batch parameter holding the loader's batch."""
        return [list(pair) for pair in self.values.engine_params(func)]

    def _runs_epoch(self, func: cst.FunctionDef) -> bool:
        """Does ``func`` hold a pass over a data loader (a loop the hot-loop analysis reads as
        iterating one)?"""
        if self._epoch_functions is None:
            index = self.index
            self._epoch_functions = {index.enclosing_function(loop) for loop, why in self.a.hot.hot_loops.items() if "data loader" in why}
        return func in self._epoch_functions

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
            out[name] = {
                "bases": bases,
                "module": self.values.is_module_class(info.node),
                "lightning": self.values.is_lightning_class(info.node),
                "loader": self.values.is_loader_class(info.node),
                "loader_sets": sorted(self.values.loader_keywords_set(info)),
                "attrs": self._attrs(name, info),
                "attr_names": sorted(info.self_attrs),  # (what a cache entry's "attrs" may lack)
                "methods": sorted(info.methods),
                "getitem": self._getitem_converts(info),
                "getitem_plain": self._getitem_plain(info),
                "getitem_device": items_on_device(self.a, info),
                "masks": self._attr_masks(info),
            }
        return out

    def _getitem_plain(self, info) -> bool | None:
        """Does the class's own `__getitem__` call nothing (its items are values in memory:
        TSL303's exception, read for a loader in another module)? None when it has none."""
        getitem = info.methods.get("__getitem__")
        if getitem is None:
            return None
        return calls_nothing(self.a.tree, getitem)

    def _attr_masks(self, info) -> dict:
        """The attributes the class stores a mask on (`self.mask = torch.eye(n, dtype=bool)`):
        TSL105's evidence for a subclass's `x[self.mask]` in another module."""
        evidence = mask_evidence(self.a)
        return {attr: dtype for attr in sorted(info.self_attrs) if (dtype := evidence.attribute_dtype(info, attr)) is not None}

    def _attrs(self, name: str, info) -> dict:
        """What the class stores on `self.<attr>`, for each attribute with a value we can name
        (deferred: each computed when the view first reads it, project/deferred.py)."""
        if self._defer is not None:
            return deferred.DeferredAttrs({}, tuple(info.self_attrs), self._defer("class", name))
        return {attr: value for attr in info.self_attrs if (value := self._attr_value(info, attr)) is not None}

    def _attr_value(self, info, attr: str) -> dict | None:
        found = [v for v in (self.abstract.stored_value(d) for d in info.self_attrs[attr]) if v is not None]
        appended = self.abstract.appended(info, attr)
        if appended:
            return {"k": "tuple", "items": appended}  # `self.flows = nn.ModuleList()` then `.append(...)`s
        return absval.join_abs(found) if found else None

    def _registered(self) -> list[dict]:
        """The module's classes and functions put into an imported registry by a decorator
        (`@registry.BOX_HEADS.register("SSDBoxHead")`): ``into`` is the registry's import name."""
        out = []
        for node in self.a.module.body:
            if not isinstance(node, (cst.ClassDef, cst.FunctionDef)):
                continue
            for dec in node.decorators:
                call = dec.decorator
                func = call.func if isinstance(call, cst.Call) else call
                if isinstance(func, cst.Attribute) and func.attr.value in libraries.REGISTRY_DECORATOR_METHODS:
                    into = self.values.qualname(func.value)
                    ref = self.ref(node)
                    if into is not None and ref is not None:
                        out.append({"into": into, "k": "class" if isinstance(node, cst.ClassDef) else "func", "ref": ref})
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
    def _calls(self) -> list[dict]:
        out = []
        for call in self.index.calls:
            callee = self.names.callee(call)
            picked = self.abstract.callee_value(call.func) if callee is None else None
            method = None
            if (
                callee is None and picked is None and isinstance(call.func, cst.Attribute) and _may_name_project_method(call.func.attr.value)
                and self.values.qualname(call.func) is None  # (named by an import, yet no callee: a library's)
                and self.values.kind(call.func.value) is Kind.UNKNOWN
            ):
                receiver = self.abs_of(call.func.value)
                if receiver.get("k") in ("any", "call", "vcall"):
                    # `agent.update(rollouts)`, `agent` one of several project classes: the view
                    # resolves the object, then its method
                    picked, method = receiver, call.func.attr.value
            if callee is None and picked is None:
                continue
            caller = self.index.enclosing_function(call)
            record = {}
            if picked is not None:
                # `ARCHS[name](cfg)`, `getattr(losses, name)()`: what may be picked, resolved by the view
                callee, record = ("%" if method is None else f"%.{method}"), {"value": picked}
            fields = {
                    **record,
                    "callee": callee,
                    "bound": callee != "%" and (callee.startswith("%.") or self.names.bound(call, callee)),  # `obj.method(...)`, `obj(...)`: `self` is implicit
                    "seq": self.index.seq(call),
                    "caller": self.ref(caller) if caller is not None else None,
                    "star": any(a.star for a in call.args),
                    "dispatch": self.names.dispatch(call),  # `self.m()`: subclasses' overrides too
            }
            out.append(self._record(fields, "call", fields["seq"], deferred.CALL_FIELDS))
        return out

    def _call_field(self, call: cst.Call, field: str):
        """A call's "line"; whether it runs per step here ("hot", "gated", "loop", "needs": see
        _per_step); or what it passes: "args" and "kwargs" hold one deferred value per argument
        (the view reads one parameter's), "args.<i>" and "kwargs.<name>" one of them."""
        if field == "line":
            return self.index.line(call)
        if field in _PER_STEP_FIELDS:
            found = self._per_step_of.get(call)
            if found is None:  # (the view reads the four together: computed once)
                found = self._per_step_of[call] = self._per_step(call)
            return found[field]
        seq = self.index.seq(call)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if field == "literals":
            return self._literals(positional, named)
        if field == "args":
            if self._defer is None:
                return [self.abs_of(v) for v in positional]
            return deferred.DeferredList([f"args.{i}" for i in range(len(positional))], self._defer("call", seq))
        if field == "kwargs":
            if self._defer is None:
                return {k: self.abs_of(v) for k, v in named.items()}
            return deferred.DeferredDict({}, tuple(named), lambda name, compute=self._defer("call", seq): compute(f"kwargs.{name}"))
        part, _, which = field.partition(".")
        return self.abs_of(positional[int(which)] if part == "args" else named[which])

    def _literals(self, positional: list, named: dict) -> list:
        """[position or keyword, value] for each argument that is a literal (or a name bound
        only to one): what a callee's parameter is fixed to (analysis/fixed_params.py)."""
        out = []
        for slot, value in [*enumerate(positional), *named.items()]:
            ok, literal = self.loaders.known_value(value)
            if ok and (literal is None or isinstance(literal, (bool, int, float, str))):
                out.append([slot, literal])
        return out

    def _per_step(self, call: cst.Call) -> dict:
        """Whether ``call`` runs per step in this module: "hot" is "yes" (a per-step loop or
        function runs it), "caller" (it is in a function: its callers decide) or "no"; "gated"
        when a step-interval `if` gates it; "loop", the seq of the loop of its own function that
        runs it when that loop is not per step here (another module's answers may make it one:
        it calls a method that runs backward and an optimizer step); "needs", [function ref,
        parameter index] when it runs only if a caller passes that parameter. Asked of the
        calls whose callers the view follows only: the hot-loop analysis is not built for a
        module no such question reaches."""
        hot = self.a.hot
        ctx = hot.hot_context(call)
        loop, gated = hot.enclosing_loop(call) if ctx is None else (None, False)
        caller = self.index.enclosing_function(call)
        return {
            "hot": "yes" if ctx is not None else ("caller" if caller is not None and self.ref(caller) is not None else "no"),
            "gated": bool(ctx.gated) if ctx is not None else gated,
            "loop": self.index.seq(loop) if loop is not None else None,
            "needs": self._needs(call),
        }

    def _needs(self, call: cst.Call) -> list | None:
        """[function ref, parameter index] when ``call`` sits in a branch its function's
        parameter turns off at its default (`if top_k is not None: top_k_logits(...)`)."""
        found = self.a.hot.guarding_param(call)
        if found is None:
            return None
        func, param = found
        ref = self.ref(func)
        index = param_index(func, param)
        return [ref, index] if ref is not None and index is not None else None

    def _feeds(self) -> list[dict]:
        """What the device-feeding loops iterate and what is handed to a trainer: only the
        value, which is all the view reads (a line would cost a position per record)."""
        out = []
        for loop in self.index.loops:
            if not isinstance(loop, cst.For):
                continue
            if self.loaders.loop_feeds_accelerator(loop):
                value = self.abs_of(self.abstract.unwrap(loop.iter))
                if value["k"] not in ("unknown", "host", "host-tensor", "device"):
                    out.append({"iter": value})
            elif self.loaders.module_feeds_accelerator:
                # A loop whose step is another module's function (`step = _loop_body(device,
                # images, ...)`): it feeds the device when one of those functions is step-like,
                # which only the view knows.
                via = sorted({c for c in (self.names.callee(n) for n in self.a.tree.walk_subtree(loop.body) if type(n) is cst.Call) if c and not c.startswith(":")})
                value = self.abs_of(self.abstract.unwrap(loop.iter)) if via else None
                if value is not None and value["k"] in ("loader", "param", "call", "sym", "attr"):
                    out.append({"iter": value, "via": via})
        for call in self.index.calls:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == ignite.RUN_METHOD and self.loaders.engine_feeds_accelerator(call.func.value):
                data = argument(call, *ignite.RUN_DATA)  # `trainer.run(loader)` of an ignite engine that moves each batch
                value = self.abs_of(data) if data is not None else absval.UNKNOWN
                if value["k"] in ("param", "call", "sym", "loader"):
                    out.append({"iter": value})
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _HANDOFF_METHODS:
                for arg in call.args:
                    value = self.abs_of(arg.value)
                    if value["k"] in ("param", "call", "sym", "loader"):
                        out.append({"iter": value})
        return out

    def _trainer_models(self) -> list[dict]:
        """The models handed to a library trainer that runs their forward every step (HF
        `Trainer(model=...)`), with the line of the construction (project/trainer_models.py)."""
        out = []
        for call in self.index.calls:
            if (self.values.qualname(call.func) or "") in transformers.TRAINERS:
                model = argument(call, 0, "model")
                if model is not None:
                    out.append({"line": self.index.line(call), "model": self.abs_of(model)})
        return out

    # -- datasets -------------------------------------------------------------------------------
    def _datasets(self) -> list[dict]:
        out = []
        for info in self.loaders.loaders:
            sources = [v for v in self.abstract.sources(info.dataset) if v["k"] in _DATASET_SOURCES]
            for call in self.loaders.dataset_calls(info):
                for arg in call.args:
                    # a transform passed in (a parameter), built by a project class or function
                    # of another module (`transform=TransformsSimCLR(size)`), or another
                    # module's module-level pipeline (`transform=TRAIN_TRANSFORMS`)
                    sources += [v for v in self.abstract.sources(arg.value) if v["k"] in _DATASET_SOURCES]
            if sources:
                unique = {repr(sorted(v.items())): v for v in sources}
                out.append({"loader": self.site(info.call), "fed": self.loaders.feeds_accelerator(info), "sources": list(unique.values())})
        return out

    def _getitem_converts(self, info) -> bool | None:
        """Does the class's own `__getitem__` turn images into floats (None: it has none)?"""
        method = info.methods.get("__getitem__") or info.methods.get("__getitems__")
        return bool(host_float_sites(self.a, method)) if method is not None else None

