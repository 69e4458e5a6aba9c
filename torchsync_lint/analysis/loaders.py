"""DataLoader tracking for the input-pipeline rules (TSL3xx).

Built once per module through ``analysis.extension("loaders", LoaderTracker)``. It answers:

- which calls construct a ``torch.utils.data.DataLoader`` (any import path or alias);
- what each constructor says about ``num_workers`` and ``pin_memory`` (keyword or positional,
  per the torch 2.13 signature), and whether that value is *known*: a literal, or a name bound
  only to literals. ``**kwargs``, ``*args``, ``args.workers``, ``cfg.pin`` and parameters are
  unknown, and an unknown value is never a finding;
- which loops iterate each loader (through names, ``self.x`` attributes, same-module function
  parameters, ``enumerate``/``zip``/``tqdm`` wrappers and ``accelerator.prepare``);
- whether the module feeds an accelerator at all, and whether a given loader does.

The records it fills in (``ArgValue``, ``LoaderInfo``) and the torch signature it reads them by
are in loader_info.py (importable from here too); what it answers about a loader's dataset, in
loader_datasets.py.
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.hotloops import ITER_WRAPPERS
from torchsync_lint.analysis.imports import dotted_parts
from torchsync_lint.analysis.index import literal_element
from torchsync_lint.analysis.kinds import Kind, join
from torchsync_lint.analysis.framework_loaders import trainer_loaders
from torchsync_lint.analysis.loader_datasets import DatasetQueries
from torchsync_lint.analysis.loader_info import DATALOADER, POSITIONS, ArgValue, LoaderInfo, known_value, literal_value
from torchsync_lint.analysis.values import HOST_RESULT_METHODS
from torchsync_lint.knowledge import ignite, lightning, transformers
from torchsync_lint.knowledge import torch as tk

# Calls that hand a loader to something that moves its batches to the accelerator itself.
_PREPARE_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})
_TRAINER_METHODS = lightning.TRAINER_METHODS
_LIGHTNING_LOADER_HOOKS = lightning.LOADER_HOOKS
_MAX_DEPTH = 8
_RUNNERS = frozenset({"lightning.Trainer", "lightning.pytorch.Trainer", "lightning.Fabric", "lightning.fabric.Fabric"})


class LoaderTracker(DatasetQueries):
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self.values = analysis.values
        self.loaders: list[LoaderInfo] = []
        self._by_call: dict[cst.Call, LoaderInfo] = {}
        self._loaders_memo: dict[tuple[int, int], list[LoaderInfo]] = {}
        self._subclass_sets: dict[cst.Call, frozenset[str]] = {}
        for call in self.index.calls:
            if self.analysis.qualname(call.func) == DATALOADER or self._project_subclass(call):
                info = LoaderInfo(call, self._dataset_arg(call), self.argument(call, "num_workers"), self.argument(call, "pin_memory"))
                self.loaders.append(info)
                self._by_call[call] = info
        self.module_feeds_accelerator = self._module_feeds_accelerator()  # (before the links: an engine's steps ask it)
        if self.loaders:
            self._link_loops()
            self._link_trainers()
        # Loaders a library builds from its settings (HF Trainer): the rules read them like
        # constructor calls, at the call that writes the settings.
        self.framework_loaders = trainer_loaders(self)
        self._by_settings = {info.call: info for info in self.framework_loaders}

    # -- constructor arguments --------------------------------------------------------------
    def info(self, call: cst.Call) -> LoaderInfo | None:
        """The loader ``call`` builds, or whose settings it writes (`TrainingArguments(...)`)."""
        return self._by_call.get(call) or self._by_settings.get(call)

    def _dataset_arg(self, call: cst.Call) -> cst.BaseExpression | None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "dataset":
                return a.value
        if call.args and call.args[0].keyword is None and not call.args[0].star:
            return call.args[0].value
        return None

    def _project_subclass(self, call: cst.Call) -> bool:
        """Does ``call`` build a DataLoader subclass of this project (`AudioDataLoader(...)`)?
        What its class passes to DataLoader itself is remembered: the call cannot unset it."""
        if (self.analysis.qualname(call.func) or "").startswith(("torch.", "torch_geometric.", "monai.")):
            return False
        settings = self.values.loader_call_settings(call)
        if settings is None:
            return False
        self._subclass_sets[call] = settings
        return True

    def argument(self, call: cst.Call, name: str) -> ArgValue:
        """``name`` as the constructor call gives it (keyword or positional)."""
        subclass = self._subclass_sets.get(call)
        if subclass is not None and (name in subclass or "*" in subclass):
            return ArgValue("unknown")  # the subclass passes it to DataLoader itself
        position = POSITIONS[name]
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return self._value_of(a)
        positional = []
        for a in call.args:
            if a.keyword is not None or a.star == "**":
                continue
            if a.star == "*":
                return ArgValue("unknown")  # `DataLoader(*args)`: any position may be it
            positional.append(a)
        if position < len(positional):
            if subclass is not None:
                return ArgValue("unknown")  # a subclass's own signature says what this position is
            return self._value_of(positional[position])
        for a in call.args:
            if a.star == "**":
                entries = self._literal_dict(a.value)
                if entries is None:
                    return ArgValue("unknown")  # `**loader_kwargs` may set it
                if name in entries:  # `params = {"num_workers": 4, ...}; DataLoader(ds, **params)`: as if written here
                    return self._value_of(cst.Arg(value=entries[name]))
        return ArgValue("absent")

    def _literal_dict(self, node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
        """key -> value of a dict display with string keys that ``node`` is, or that a name
        bound once to one holds and nothing in its scope changes (no item store, no `update`,
        no alias or other use than `**name`); None otherwise."""
        if isinstance(node, cst.Name):
            defs = self.values.reaching_defs(node)
            if len(defs) != 1 or defs[0].how != "assign" or not isinstance(defs[0].value, cst.Dict):
                return None
            scope = self.index.scope_of(defs[0].stmt)
            for other in self.index.tree.walk_subtree(scope):
                if type(other) is cst.Name and other.value == node.value and other is not node and not self._binds(other, defs[0]):
                    parent = self.index.parent(other)
                    if not (isinstance(parent, cst.Arg) and parent.star == "**"):
                        return None  # changed, aliased or handed on: not what the display says
            node = defs[0].value
        if not isinstance(node, cst.Dict):
            return None
        entries: dict[str, cst.BaseExpression] = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return None  # `{**base, ...}`
            ok, key = literal_value(element.key)
            if not ok or not isinstance(key, str):
                return None
            entries[key] = element.value
        return entries

    def _binds(self, name: cst.Name, d) -> bool:
        """Is ``name`` the target of ``d``'s own assignment?"""
        parent = self.index.parent(name)
        return isinstance(parent, cst.AssignTarget) and self.index.parent(parent) is d.stmt

    def _value_of(self, arg: cst.Arg) -> ArgValue:
        ok, value = self.known_value(arg.value)
        return ArgValue("known", value, arg) if ok else ArgValue("unknown", None, arg)

    def known_value(self, node: cst.BaseExpression, depth: int = 0):
        """A literal, or a name whose every reaching binding is the same literal."""
        return known_value(self.values, node, depth)

    # -- which loader an expression holds -------------------------------------------------------
    def loaders_of(self, expr: cst.BaseExpression | None, depth: int = 0) -> list[LoaderInfo]:
        # Memoised on (node, depth left): through parameters every call site is followed, so
        # without it a helper called from many places inside functions that are themselves
        # called from many places is walked once per path (a2c-ppo-acktr: minutes). A node met
        # again while its answer is computed is a cycle: no loader along it. Every loader found
        # is one built here (``_by_call``): a module that builds none holds none.
        if expr is None or depth > _MAX_DEPTH or not self._by_call:
            return []
        key = (id(expr), depth)
        found = self._loaders_memo.get(key)
        if found is None:
            self._loaders_memo[key] = []
            found = self._loaders_memo[key] = self._loaders_of(expr, depth)
        return list(found)

    def _loaders_of(self, expr: cst.BaseExpression, depth: int) -> list[LoaderInfo]:
        if isinstance(expr, cst.Call):
            info = self._by_call.get(expr)
            if info is not None:
                return [info]
            parts = dotted_parts(expr.func)
            if parts and parts[-1] in ITER_WRAPPERS:
                out: list[LoaderInfo] = []
                for a in expr.args:
                    if a.keyword is None and not a.star:
                        out += self.loaders_of(a.value, depth + 1)
                return out
            target = self.index.target_of(expr)
            if target is not None:
                out = []
                for r in self.index.returns.get(target, []):
                    out += self.loaders_of(r, depth + 1)
                yielded = self.values._generator_items(expr)  # noqa: SLF001 - `sample_data(loader)` yields its batches
                if yielded is not None:
                    out += self.loaders_of(yielded, depth + 1)
                return out
            return []
        if isinstance(expr, cst.Name):
            out = []
            for d in self.values.reaching_defs(expr):
                out += self._loaders_of_def(d, depth + 1)
            return out
        if isinstance(expr, cst.IfExp):  # `DataLoader(test) if test is not None else None`
            return self.loaders_of(expr.body, depth + 1) + self.loaders_of(expr.orelse, depth + 1)
        if isinstance(expr, cst.Attribute):
            out = []
            for d in self.index.field_defs(expr) or ():  # `self.loader`, `trainer.loader`
                out += self._loaders_of_def(d, depth + 1)
            return out
        return []

    def _loaders_of_def(self, d, depth: int) -> list[LoaderInfo]:
        if d.how == "assign":
            return self.loaders_of(d.value, depth)
        if d.how == "for" and not d.path and isinstance(d.value, (cst.Tuple, cst.List)):
            # `for loader in (train_loader, val_loader):` holds each of them in turn
            out = []
            for el in d.value.elements:
                out += self.loaders_of(el.value, depth + 1)
            return out
        if d.how == "unpack" and d.path:
            value = d.value
            if isinstance(value, (cst.Tuple, cst.List)) and 0 <= d.path[0] < len(value.elements):
                return self.loaders_of(value.elements[d.path[0]].value, depth)
            if isinstance(value, cst.Call):
                # `model, opt, loader = accelerator.prepare(model, opt, loader)`
                if isinstance(value.func, cst.Attribute) and value.func.attr.value in _PREPARE_METHODS:
                    positional = [a.value for a in value.args if a.keyword is None and not a.star]
                    if 0 <= d.path[0] < len(positional):
                        return self.loaders_of(positional[d.path[0]], depth)
                    return []
                target = self.index.target_of(value)
                if target is not None:
                    out = []
                    for r in self.index.returns.get(target, []):
                        if isinstance(r, (cst.Tuple, cst.List)) and 0 <= d.path[0] < len(r.elements):
                            out += self.loaders_of(r.elements[d.path[0]].value, depth)
                    return out
            return []
        if d.how == "param":
            return self._loaders_of_param(d, depth)
        return []

    def _loaders_of_param(self, d, depth: int) -> list[LoaderInfo]:
        """What the call sites pass for the parameter (keywords, positions past a bound `self`,
        `**{...}` spreads: index.argument_for)."""
        out: list[LoaderInfo] = []
        for call in self.index.call_sites(d.func):
            arg = self.index.argument_for(call, d.func, d.param)
            if arg is not None and arg is not d.param.default:
                out += self.loaders_of(arg, depth)
        return out

    # -- loops and trainers -------------------------------------------------------------------
    def _link_loops(self) -> None:
        for loop in self.index.loops:
            if not isinstance(loop, cst.For):
                continue
            for info in self.loaders_of(loop.iter):
                if loop not in info.loops:
                    info.loops.append(loop)
        # `batch = next(batches)` inside a loop reads the loader once per iteration, like a
        # `for` over it (StyleGAN's `sample_data` generator); so does `next(iter(val_loader))`
        # in a function the step loop calls (a sample sheet every N steps): its body is where
        # the batch goes.
        for call in self.index.calls:
            if isinstance(call.func, cst.Name) and call.func.value == "next" and call.args:
                loop = next((a for a in self.index.ancestors(call) if isinstance(a, (cst.For, cst.While, cst.FunctionDef))), None)
                if isinstance(loop, cst.FunctionDef) and loop not in self.analysis.hot.hot_functions:
                    continue
                if loop is not None:
                    for info in self.loaders_of(call.args[0].value):
                        if loop not in info.loops:
                            info.loops.append(loop)

    def _link_trainers(self) -> None:
        for call in self.index.calls:
            func = call.func
            if not isinstance(func, cst.Attribute):
                continue
            method = func.attr.value
            handed = method in _PREPARE_METHODS or (method in _TRAINER_METHODS and self._is_lightning_trainer(func.value))
            if not handed and method == ignite.RUN_METHOD and self.engine_feeds_accelerator(func.value):
                # `trainer.run(loader)`: ignite iterates the loader, a step per batch, and the
                # engine moves each batch to the device
                data = argument(call, *ignite.RUN_DATA)
                for info in self.loaders_of(data) if data is not None else ():
                    info.handed_to_trainer = True
                continue
            if not handed:
                continue
            for a in call.args:
                for info in self.loaders_of(a.value):
                    info.handed_to_trainer = True
        # `def train_dataloader(self): return DataLoader(...)` in a LightningModule/DataModule.
        for func, info in self.index.class_of_method.items():
            if func.name.value in _LIGHTNING_LOADER_HOOKS and self._is_lightning_class(info.node):
                for r in self.index.returns.get(func, []):
                    for loader in self.loaders_of(r):
                        loader.handed_to_trainer = True

    def engine_feeds_accelerator(self, engine: cst.BaseExpression, depth: int = 0) -> bool:
        """An ignite engine whose steps put each batch on an accelerator: one built by
        `create_supervised_trainer(..., device=<accelerator>)`, or an `Engine(fn)` whose
        process function copies its batch there or runs a device model, directly or returned
        by a factory function of this module. Not known: False."""
        made = self._constructed_by(engine)
        if made is None or depth > 3:
            return False
        factory = self.index.target_of(made)
        if factory is not None:  # `trainer = create_trainer(model, opt, device=device)` of this module
            return any(self.engine_feeds_accelerator(r, depth + 1) for r in self.index.returns.get(factory, []))
        qn = self.values.qualname(made.func) or ""
        if qn in ignite.ENGINE_FACTORIES:
            return self._to_accelerator(argument(made, *ignite.ENGINE_FACTORIES[qn][0]))
        # an engine, or another module's factory of one (`create_trainer(train_step)`)
        process = self.values.batch_function_of(made)
        return process is not None and self.function_feeds_accelerator(process)

    def engine_run_loaders(self, func: cst.FunctionDef) -> list[LoaderInfo]:
        """The loaders an engine running ``func`` once per batch is run over here
        (`Engine(step).run(loader)`, `trainer = Engine(step); trainer.run(loader)`): where the
        batch ``func`` is handed comes from."""
        out: list[LoaderInfo] = []
        for call in self.index.calls:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == ignite.RUN_METHOD:
                made = self._constructed_by(call.func.value)
                data = argument(call, *ignite.RUN_DATA)
                if made is not None and data is not None and self.values.batch_function_of(made) is func:
                    out += self.loaders_of(data)
        return out

    def _to_accelerator(self, device: cst.BaseExpression | None) -> bool:
        """A library's `device=` argument naming an accelerator (`None`: it moves nothing)."""
        return device is not None and not (isinstance(device, cst.Name) and device.value == "None") and self.values.device_of(device) == "accelerator"

    def _constructed_by(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The one call that made ``expr`` (itself, or what every binding of a name or
        `self.x` assigns or unpacks from a tuple display: `trainer, evaluator = Engine(a), Engine(b)`)."""
        if isinstance(expr, cst.Call):
            return expr
        if isinstance(expr, cst.Name):
            defs = self.values.reaching_defs(expr)
            made = {d.value if d.how == "assign" else literal_element(d) if d.how == "unpack" else None for d in defs}
            return made.pop() if len(made) == 1 and isinstance(next(iter(made)), cst.Call) else None
        return self._dataset_call(expr)  # `self.trainer`

    def function_feeds_accelerator(self, func: cst.FunctionDef) -> bool:
        """Does ``func``'s body copy something to the accelerator, or run a model that is
        not provably on the CPU?"""
        return self.module_feeds_accelerator and any(
            isinstance(node, cst.Call) and (self.is_h2d_call(node, any_receiver=True) or self._runs_device_model(node))
            for node in self.analysis.tree.walk_subtree(func.body)
        )

    def _is_lightning_trainer(self, expr: cst.BaseExpression) -> bool:
        return (self.values.origin_qualname(expr) or "") in ("lightning.Trainer", "lightning.pytorch.Trainer")

    def _is_lightning_class(self, cls: cst.ClassDef) -> bool:
        for base in cls.bases:
            qn = self.analysis.qualname(base.value) or ""
            if qn.startswith("lightning.") and qn.rsplit(".", 1)[-1] in ("LightningModule", "LightningDataModule"):
                return True
        return False

    # -- does the code feed an accelerator? ---------------------------------------------------
    def _module_feeds_accelerator(self) -> bool:
        """Any `.cuda()`, `.to(<accelerator>)`, accelerator-device factory, Accelerate or Lightning use.

        A script whose only device is the CPU (`device = "cpu"`, or none at all) does not, and
        neither does one whose every Lightning `Trainer`/`Fabric` says `accelerator="cpu"`: the
        `.cuda()` branches in its module then never run.
        """
        runners = [c for c in self.index.calls if (self.analysis.qualname(c.func) or "") in _RUNNERS]
        if runners and all(self._explicit_cpu(c) for c in runners):
            return False
        if self.analysis.env.project_uses_accelerator():
            return True  # a data module of a project whose trainer runs on an accelerator
        for call in self.index.calls:
            if self.is_h2d_call(call, any_receiver=True):
                return True
            qn = self.analysis.qualname(call.func) or ""
            if qn == "torch.device" and call.args and self.values.device_of(call.args[0].value) == "accelerator":
                return True
            if qn == "accelerate.Accelerator":
                return True
            if qn in _RUNNERS and not self._explicit_cpu(call):
                return True
            if qn in transformers.TRAINERS:
                return True  # HF Trainer: on the accelerator unless its arguments say `use_cpu=True`
            if qn in ignite.ENGINE_FACTORIES:
                if self._to_accelerator(argument(call, *ignite.ENGINE_FACTORIES[qn][0])):  # `create_supervised_trainer(..., device="cuda")`
                    return True
            for a in call.args:
                if a.keyword is not None and a.keyword.value == "device" and self.values.device_of(a.value) == "accelerator":
                    if qn.startswith("torch."):
                        return True
        return False

    def _explicit_cpu(self, call: cst.Call) -> bool:
        """`Trainer(accelerator="cpu")` / `Fabric(accelerator="cpu")`."""
        accel = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "accelerator"), None)
        ok, value = literal_value(accel) if accel is not None else (False, None)
        return ok and value == "cpu"

    def is_h2d_call(self, call: cst.Call, any_receiver: bool = False) -> bool:
        """`x.cuda(...)` or `x.to(<accelerator>, ...)` on a host tensor (any non-model with ``any_receiver``)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in tk.COPY_METHODS:
            return False
        if self.analysis.qualname(func) is not None:
            return False  # `torch.cuda`, a module attribute, not a method call
        if self.values.copy_destination(call) != "accelerator":
            return False  # a dtype cast on the host, a copy to the CPU, or a place we cannot tell
        kind = self.batch_kind(func.value)
        if any_receiver:
            return True if func.attr.value == "to" else kind is not Kind.HOST
        return kind is Kind.HOST_TENSOR

    def batch_kind(self, expr: cst.BaseExpression, depth: int = 0) -> Kind:
        """Is ``expr`` a host tensor *on some path* to this use (for "is this a host-to-device copy")?

        Like ``values.kind``, except that a name that is a host tensor on one path and a device
        tensor on another (`if cuda: x = x.cuda()` then `x = x.to("mps")`) counts as a host
        tensor: on the path where it is one, the copy is real. Loop iterables are evaluated
        the same way, so `for t in batch` after `batch = ...` follows the batch.
        """
        if isinstance(expr, cst.Name):
            kinds = {self._def_kind(d, depth + 1) for d in self.values.reaching_defs(expr)}
            if Kind.HOST_TENSOR in kinds and kinds <= {Kind.HOST_TENSOR, Kind.DEVICE}:
                return Kind.HOST_TENSOR
            return join(kinds)
        if depth > _MAX_DEPTH:
            return self.values.kind(expr)
        if isinstance(expr, cst.Subscript):
            base = self.batch_kind(expr.value, depth + 1)
            if base is Kind.CONTAINER:
                return Kind.DEVICE  # a value of a dict (or tuple) of device tensors
            return base if base in (Kind.DEVICE, Kind.HOST_TENSOR) else self.values.kind(expr)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and self.analysis.qualname(expr.func) is None:
            method = expr.func.attr.value
            if method not in ("to", "cuda", "cpu") and method not in HOST_RESULT_METHODS:
                base = self.batch_kind(expr.func.value, depth + 1)
                if base in (Kind.HOST_TENSOR, Kind.DEVICE):
                    return base  # tensor methods keep the device
        if isinstance(expr, cst.BinaryOperation):
            sides = {self.batch_kind(expr.left, depth + 1), self.batch_kind(expr.right, depth + 1)}
            if Kind.DEVICE in sides:
                return Kind.DEVICE
            if Kind.HOST_TENSOR in sides and sides <= {Kind.HOST_TENSOR, Kind.HOST}:
                return Kind.HOST_TENSOR
        return self.values.kind(expr)

    def _def_kind(self, d, depth: int) -> Kind:
        """A binding's kind, evaluating a loop's iterable in statement order too."""
        if depth <= _MAX_DEPTH and d.how == "for" and d.value is not None:
            iterable = d.value
            wrapper = isinstance(iterable, cst.Call) and self.analysis.qualname(iterable.func) is None and isinstance(iterable.func, cst.Name)
            if not wrapper:  # `enumerate`/`zip` wrappers: the shared logic knows them
                k = self.batch_kind(iterable, depth)
                if k is Kind.CONTAINER:
                    k = Kind.DEVICE
                if k in (Kind.HOST_TENSOR, Kind.DEVICE):
                    return k  # iterating a batch (a tuple or dict of tensors) yields its tensors
        k = self.values._def(d)  # noqa: SLF001 - same package
        if k in (None, Kind.UNKNOWN) and d.how == "for" and self.is_batch_loop(d.stmt):
            return Kind.HOST_TENSOR
        return k if k is not None else Kind.UNKNOWN

    def is_batch_loop(self, loop: cst.CSTNode) -> bool:
        """A per-step loop over an iterable we cannot place (a loader built elsewhere, a
        parameter): what it yields are batches from the host, which the loop moves to the
        device itself. Iterables known to yield device values (an accelerate-prepared loader,
        device tensors, a model) are not."""
        if not isinstance(loop, cst.For) or loop not in self.analysis.hot.hot_loops:
            return False
        kind = self.values.kind(loop.iter)
        return kind in (Kind.UNKNOWN, Kind.LOADER)

    def feeds_accelerator(self, info: LoaderInfo) -> bool:
        """The loader's batches go to an accelerator (and the module uses one)."""
        if info.feeds is None:
            info.feeds = self._feeds_accelerator(info)
        return info.feeds

    def _feeds_accelerator(self, info: LoaderInfo) -> bool:
        if self.analysis.env.loader_feeds_elsewhere(info.call):
            return True  # another module of the project moves its batches to the device
        if not self.module_feeds_accelerator:
            return False
        if info.handed_to_trainer:
            return True
        return any(self.loop_feeds_accelerator(loop) for loop in info.loops)

    def loop_feeds_accelerator(self, loop: cst.For) -> bool:
        """Does the loop copy something to the accelerator, or run a model that is not
        provably on the CPU? (A CPU model trained in a script that merely mentions cuda feeds
        nothing.)"""
        if not self.module_feeds_accelerator:
            return False
        for node in self.analysis.tree.walk_subtree(loop.body):
            if isinstance(node, cst.Call) and (self.is_h2d_call(node, any_receiver=True) or self._runs_device_model(node)):
                return True
        return False

    def _runs_device_model(self, call: cst.Call) -> bool:
        hot = self.analysis.hot
        if not hot.is_step_call(call):
            return False
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "step") and self.index.target_of(call) is None:
            return False  # `loss.backward()`, `optimizer.step()`: say nothing about where the model runs (a `trainer.step(x)` of this module's does)
        receiver = func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func
        return self.values.kind(receiver) is not Kind.CPU_MODEL


def argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """What ``call`` passes by ``keyword`` or at ``position`` (None: not passed, or `*args`)."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    plain = []
    for a in call.args:
        if a.star == "*":
            return None
        if a.keyword is None and not a.star:
            plain.append(a.value)
    return plain[position] if position < len(plain) else None


def loaders(analysis) -> LoaderTracker:
    """The module's loader tracker (built once)."""
    return analysis.extension("loaders", LoaderTracker)
