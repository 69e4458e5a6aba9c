"""The environment one module is analysed in, from the project view: the answers of
analysis/env.py's questions, in terms of this module's own syntax nodes."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.env import Env
from torchsync_lint.analysis.fixed_params import DEFAULT
from torchsync_lint.analysis.hotloops import Reason
from torchsync_lint.analysis.index import param_index
from torchsync_lint.analysis.kinds import Kind, join
from torchsync_lint.project import absval
from torchsync_lint.project.describe import remote_site
from torchsync_lint.project.callees import CalleeNames, local_qualname
from torchsync_lint.project.view import ProjectView


class ModuleEnv(Env):
    def __init__(self, view: ProjectView, path: str) -> None:
        self.view = view
        self.path = path  # this module's project-relative path
        self.analysis = None
        self._names: CalleeNames | None = None

    def bind(self, analysis) -> None:
        self.analysis = analysis

    # -- helpers ------------------------------------------------------------------------------
    def _ref(self, func: cst.FunctionDef) -> str | None:
        qual = local_qualname(self.analysis.index, func)
        return f"{self.path}:{qual}" if qual else None

    def _param(self, func: cst.FunctionDef, param: cst.Param) -> dict | None:
        ref = self._ref(func)
        if ref is None:
            return None
        index = param_index(func, param)
        if index is None:
            return None
        return self.view.param_value(ref, index)

    def _call_target(self, qualname: str) -> tuple[str, dict] | None:
        return self.view.call_target(qualname, self.path)

    def project_uses_accelerator(self) -> bool:
        return any(summary.get("accelerator") for summary in self.view.summaries.values())

    # -- values ---------------------------------------------------------------------------------
    def star_import(self, name: str):
        return self.view.star_binding(self.path, name)

    def symbol_kind(self, qualname: str):
        found = self.view.resolve_name(qualname, self.path)
        if found is None or found[0] != "value":
            return None
        return absval.kind_of(self.view.resolve({"k": "sym", "name": qualname}, self.path))

    def call_kind(self, qualname: str, call: cst.Call, values):
        found = self.view.resolve_name(qualname, self.path)
        if found is None:
            return None
        if found[0] == "class":
            if self.view.class_flag(found[1], found[2], "loader"):
                return Kind.LOADER
            return Kind.CPU_MODEL if self.view.class_flag(found[1], found[2], "module") else Kind.UNKNOWN
        if found[0] == "function":
            own = self._own_argument(found, call)
            if own is not None:
                return values.kind(own)  # `reduce_tensor(loss)`: what it returns is this call's own argument
            return absval.kind_of(self.view.returns(found[1], found[2]))
        return None

    def _own_argument(self, found: tuple, call: cst.Call, position: int | None = None) -> cst.BaseExpression | None:
        """When a function returns (a tensor computed from) one of its parameters, the argument
        this call passes for it: the answer for this call, not for every call joined. With
        ``position``, the same for that element of a returned tuple (`return loss, count + 1`)."""
        record = self.view.function(found[1], found[2])
        returned = record["returns"] if record else None
        if position is not None:
            returned = returned["items"][position] if returned and returned.get("k") == "tuple" and position < len(returned["items"]) else None
        while returned and returned.get("k") == "like":
            returned = returned["of"]
        if not returned or returned.get("k") != "param" or returned["fn"] != f"{found[1]}:{found[2]}":
            return None
        return _argument_at(call, record, returned["i"])

    def call_mask(self, qualname: str, call: cst.Call):
        found = self.view.resolve_name(qualname, self.path)
        if found is None or found[0] != "function":
            return None
        record = self.view.function(found[1], found[2])
        return record.get("mask") if record else None

    def call_element(self, qualname: str, call: cst.Call, position: int, values):
        found = self.view.resolve_name(qualname, self.path)
        if found is None or found[0] != "function":
            return None
        own = self._own_argument(found, call, position)
        if own is not None:
            return values.kind(own)  # `loss, count = step(batch, count)`: this call's own argument
        returned = self.view.returns(found[1], found[2])
        if returned.get("k") != "tuple":
            return None
        return absval.kind_of(absval.element(returned, position))

    def forward_element_is_host(self, origin: str, position: int) -> bool:
        for method in ("forward", "__call__"):
            found = self.view.resolve_name(f"{origin}.{method}", self.path)
            if found is not None and found[0] == "function":
                returned = self.view.returns(found[1], found[2])
                return returned.get("k") == "tuple" and absval.is_host_value(absval.element(returned, position))
        return False

    def generator_source(self, call: cst.Call, values):
        qualname = values.qualname(call.func)
        bound = 0
        if qualname is None and isinstance(call.func, cst.Attribute):
            origin = values.origin_qualname(call.func.value)
            qualname, bound = (f"{origin}.{call.func.attr.value}", 1) if origin else (None, 0)
        target = self._call_target(qualname) if qualname else None
        if target is None or target[1]["yields"] is None:
            return None
        index = target[1]["yields"] - (target[1]["bound"] if bound else 0)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if 0 <= index < len(positional):
            return positional[index]
        name = target[1]["params"][target[1]["yields"]]
        return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)

    def param_kind(self, func: cst.FunctionDef, param: cst.Param):
        value = self._param(func, param)
        return absval.kind_of(value) if value is not None else None

    def param_element(self, func: cst.FunctionDef, param: cst.Param, position: int):
        value = self._param(func, param)
        if value is None or value.get("k") not in ("tuple", "any"):
            return None  # (the joined kind answers for a value of no known shape)
        element = absval.element(value, position)
        return absval.kind_of(element) if element.get("k") != "elem" else None

    def star_kind(self, func: cst.FunctionDef, keyword: bool):
        ref = self._ref(func)
        value = self.view.star_value(ref, keyword) if ref is not None else None
        return absval.kind_of(value) if value is not None else None

    def _remote_slots(self, func: cst.FunctionDef, param: cst.Param):
        """(caller path, call record, slot) for each call site of ``func`` in another module:
        the argument index or keyword that passes ``param``, None where it is left to its
        default. None when ``func`` is no project function or a call site passes
        `*args`/`**kwargs` (what reaches ``param`` is unknown)."""
        ref = self._ref(func)
        if ref is None:
            return None
        index = param_index(func, param)
        name = param.name.value
        out = []
        for caller_path, call, shift in self.view.callers(ref):
            if caller_path == self.path:
                continue  # this module's own call sites are the analysis's to read
            if call["star"]:
                return None
            if index is not None and 0 <= index - shift < len(call["args"]):
                out.append((caller_path, call, index - shift))
            else:
                out.append((caller_path, call, name if name in call["kwargs"] else None))
        return out

    def param_passed(self, func: cst.FunctionDef, param: cst.Param):
        slots = self._remote_slots(func, param)
        return None if slots is None else any(slot is not None for _, _, slot in slots)

    def param_literals(self, func: cst.FunctionDef, param: cst.Param):
        slots = self._remote_slots(func, param)
        if slots is None:
            return None
        out = []
        for _, call, slot in slots:
            if slot is None:
                out.append(DEFAULT)
                continue
            found = [value for where, value in call["literals"] if where == slot]
            if not found:
                return None  # not a literal
            out.append(found[0])
        return out

    def host_call_result(self, call: cst.Call) -> bool:
        targets = self._callee_targets(call) or self._returned_callables(call)
        return bool(targets) and all(absval.is_host_value(self.view.returns(*ref.split(":", 1))) for ref, _ in targets)

    def _returned_callables(self, call: cst.Call) -> list[tuple[str, int]]:
        """`train = make_train(model, opt)` ... `train(x, y)`: the functions a project factory
        returns, which the call runs (the callers table names the callee `make_train.__call__`,
        an instance's; resolving what the factory returns is an answer, not part of the table)."""
        callee = self._names.callee(call) if self._names is not None else None
        if not callee or not callee.endswith(".__call__") or callee[:1] in "^~@!%:":
            return []
        maker = self.view.resolve_name(callee[: -len(".__call__")], self.path)
        if maker is None or maker[0] != "function":
            return []
        return self.view.methods_of_value(self.view.returns(maker[1], maker[2]), "__call__", maker[1])

    def param_never_none(self, func: cst.FunctionDef, param: cst.Param):
        slots = self._remote_slots(func, param)
        if slots is None:
            return False if self._ref(func) is not None else None  # (a `*args` call site may pass None)
        for caller_path, call, slot in slots:
            if slot is None or any(where == slot and literal is None for where, literal in call["literals"]):
                return False  # left to its default, or None passed
            value = call["args"][slot] if isinstance(slot, int) else call["kwargs"][slot]
            if absval.kind_of(self.view.resolve(value, caller_path)) not in (Kind.DEVICE, Kind.HOST_TENSOR):
                return False
        return True if slots else None

    def has_callers(self, func: cst.FunctionDef) -> bool:
        ref = self._ref(func)
        return bool(ref and any(path != self.path for path, _, _ in self.view.callers(ref)))

    def param_device(self, func: cst.FunctionDef, param: cst.Param):
        value = self._param(func, param)
        return value["where"] if value is not None and value.get("k") == "devspec" else None

    def param_origin(self, func: cst.FunctionDef, param: cst.Param):
        value = self._param(func, param)
        return value["origin"] if value is not None and value.get("k") == "object" else None

    def attribute_kind(self, base: cst.BaseExpression, attr: str, values):
        origin = values.origin_qualname(base)
        found = self.view.resolve_name(origin, self.path) if origin else None
        if found is None or found[0] != "class":
            return None
        instance = values.instance_of(base)
        bind = self._instance_bindings(found[1], found[2], instance, values) if instance is not None else None
        value = self.view.class_attr(found[1], found[2], attr, bind=bind)
        return absval.kind_of(value) if value is not None else None

    def _instance_bindings(self, path: str, cls: str, instance, values) -> dict:
        """What the calls made on one local object of a project class pass for its methods'
        parameters, as the view's bindings (kinds); the methods never called on it are closed
        unless it escapes (analysis/instances.py)."""
        methods = self.view.method_refs(path, cls)
        bind: dict = {}
        calls_by_ref = {methods[m]: calls for m, calls in instance.methods.items() if m in methods}
        if "__init__" in methods:
            calls_by_ref[methods["__init__"]] = [instance.construction]
        for ref, calls in calls_by_ref.items():
            record = self.view.function(*ref.split(":", 1))
            kinds: dict[int, list] = {}
            for call in calls:
                if any(a.star for a in call.args):
                    continue
                positional = [a.value for a in call.args if a.keyword is None]
                for i, arg in enumerate(positional, start=1):
                    kinds.setdefault(i, []).append(values.kind(arg))
                for a in call.args:
                    if a.keyword is not None and a.keyword.value in record["params"]:
                        kinds.setdefault(record["params"].index(a.keyword.value), []).append(values.kind(a.value))
            for i, found in kinds.items():
                bind[f"{ref}#{i}"] = absval.of_kind(join(found))
        if not instance.escapes:
            for ref in methods.values():
                bind[f"{ref}#closed"] = True
        return bind

    def self_attribute_items(self, cls: cst.ClassDef, attr: str, path: tuple[int, ...]):
        """The kind of (part ``path`` of) an item of iterating `self.<attr>` of ``cls`` (a
        class of this module), as the project view resolves what the class (or its project
        bases) store there: a prefetcher's `__iter__` yields device batches."""
        qual = local_qualname(self.analysis.index, cls)
        if qual is None:
            return None
        value = self.view.class_attr(self.path, qual, attr)
        if value is None:
            return None
        item = self.view.items_of(value)
        for i in path:
            item = absval.element(item, i)
        kind = absval.kind_of(self.view.resolve(item, self.path))
        return kind if kind is not Kind.UNKNOWN else None

    def inherited_attribute_kind(self, cls: cst.ClassDef, attr: str):
        for base in cls.bases:
            qualname = self.analysis.values.qualname(base.value)
            found = self.view.resolve_name(qualname, self.path) if qualname else None
            if found is not None and found[0] == "class":
                value = self.view.class_attr(found[1], found[2], attr)
                if value is not None:
                    return Kind.MODEL if absval.kind_of(value) is Kind.CPU_MODEL else absval.kind_of(value)
        return None

    def inherited_attribute_mask(self, cls: cst.ClassDef, attr: str):
        for base in cls.bases:
            qualname = self.analysis.values.qualname(base.value)
            found = self.view.resolve_name(qualname, self.path) if qualname else None
            if found is not None and found[0] == "class":
                for _, _, record in self.view.lineage(found[1], found[2]):
                    if attr in record.get("attr_names", ()):
                        return record.get("masks", {}).get(attr)  # the nearest class storing it decides
        return None

    def is_module_class(self, qualname: str) -> bool:
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_flag(found[1], found[2], "module"))

    def derives_from(self, qualname: str, bases: frozenset[str]) -> bool:
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and set(self.view.library_bases(found[1], found[2])) & bases)

    def metric_base(self, qualname: str):
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        if not (found and found[0] == "class"):
            return None
        bases = [b for b in self.view.library_bases(found[1], found[2]) if b.split(".")[0] == "torchmetrics"]
        return (bases[0], self.view.class_list(found[1], found[2], "methods")) if bases else None

    def is_loader_class(self, qualname: str) -> bool:
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_flag(found[1], found[2], "loader"))

    def loader_class_settings(self, qualname: str):
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        if not (found and found[0] == "class" and self.view.class_flag(found[1], found[2], "loader")):
            return None
        return frozenset(self.view.class_list(found[1], found[2], "loader_sets"))

    def trainer_logger_states(self) -> list[str]:
        return [state for path in sorted(self.view.summaries) for state in self.view.summaries[path].get("lightning_loggers", ())]

    def is_lightning_class(self, qualname: str) -> bool:
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_flag(found[1], found[2], "lightning"))

    # -- trackers -------------------------------------------------------------------------------
    def loader_feeds_elsewhere(self, call: cst.Call) -> bool:
        return f"{self.path}@{self.analysis.index.seq(call)}" in self.view.fed_sites()

    def passes_fed_dataset_arguments(self) -> bool:
        return any(path == self.path for path, _ in self.view.fed_datasets().arguments)

    def fed_dataset_arguments(self, call: cst.Call) -> list[cst.BaseExpression]:
        slots = self.view.fed_datasets().arguments.get((self.path, self.analysis.index.seq(call)))
        if not slots or any(a.star for a in call.args):
            return []
        positional = [a.value for a in call.args if a.keyword is None]
        by_name = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        out = []
        for slot in sorted(slots, key=str):
            value = positional[slot] if isinstance(slot, int) and slot < len(positional) else by_name.get(slot) if isinstance(slot, str) else None
            if value is not None:
                out.append(value)
        return out

    def fed_module_values(self) -> list[str]:
        prefix = f"{self.path}:"
        return sorted(ref[len(prefix):] for ref in self.view.fed_datasets().values if ref.startswith(prefix))

    def dataset_class_fed(self, cls: cst.ClassDef) -> bool:
        qual = local_qualname(self.analysis.index, cls)
        return qual is not None and f"{self.path}:{qual}" in self.view.fed_datasets().classes

    def function_feeds_dataset(self, func: cst.FunctionDef) -> bool:
        ref = self._ref(func)
        return ref is not None and ref in self.view.fed_datasets().functions

    def dataset_class_in_memory(self, call: cst.Call, values) -> bool:
        qualname = values.qualname(call.func)
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_getitem_flag(found[1], found[2], "getitem_plain"))

    def dataset_class_on_device(self, call: cst.Call, values) -> bool:
        qualname = values.qualname(call.func)
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_getitem_flag(found[1], found[2], "getitem_device"))

    def dataset_class_converts(self, call: cst.Call, values) -> bool:
        qualname = values.qualname(call.func)
        found = self.view.resolve_name(qualname, self.path) if qualname else None
        return bool(found and found[0] == "class" and self.view.class_converts(found[1], found[2]))

    def has_remote_metrics(self) -> bool:
        if not any(s.get("metrics") for s in self.view.summaries.values()):
            return False  # no module of the component builds a metric: no value is one
        summary = self.view.summaries.get(self.path, {})
        for qual, record in summary.get("functions", {}).items():
            for index in range(len(record["params"])):
                value = self.view.param_value(f"{self.path}:{qual}", index)
                if value is not None and (value.get("k") == "metric" or (value.get("k") == "dict" and any(v.get("k") == "metric" for v in value["items"].values()))):
                    return True  # a metric, or a dict of them
        return False

    def param_metrics(self, func: cst.FunctionDef, param: cst.Param):
        value = self._param(func, param)
        if value is None or value.get("k") != "metric":
            return None
        return [remote_site(value)]

    def param_metric_dict(self, func: cst.FunctionDef, param: cst.Param):
        value = self._param(func, param)
        if value is None or value.get("k") != "dict" or not value["items"] or any(v.get("k") != "metric" for v in value["items"].values()):
            return None
        return {key: [remote_site(v)] for key, v in value["items"].items()}

    # -- per-step code --------------------------------------------------------------------------
    def hot_caller(self, func: cst.FunctionDef):
        ref = self._ref(func)
        found = self.view.hot(ref) if ref else None
        if found is None:
            return None
        where, gated = found
        how = "in a gated branch of a per-step loop" if gated else "every step"
        return Reason(lambda: f"`{func.name.value}` is called {how} from {where}"), None, gated

    def is_step_call(self, call: cst.Call) -> bool:
        if any(self.view.function_flag(ref, "step") for ref, _ in self._callee_targets(call)):
            return True  # (`agent.update(rollouts)` of an A2C or a PPO agent: either runs a step)
        # `self.train_step()` in a base class's loop: an override in a subclass runs the step
        return any(self.view.function_flag(ref, "step") for ref in self.view.overrides(self._names.dispatch(call)))

    def hands_model_to_forward(self, call: cst.Call, values) -> bool:
        """Does ``call`` hand a model to a function of another module that calls it (`sample(model,
        x)` of `def sample(model, x): ... model(x)`)? That runs the model's forward, as
        `model(x)` would here (a loop calling a function that runs whole passes over a loader
        stays an epoch loop: HotLoopAnalysis drops those)."""
        found = self._callee_target_and_shift(call)
        if found is None:
            return False
        path, qual = found[0].split(":", 1)
        record = self.view.function(path, qual)
        if not record or not record.get("forwards"):
            return False
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        for i in record["forwards"]:
            arg = positional[i - found[1]] if 0 <= i - found[1] < len(positional) else named.get(record["params"][i])
            if arg is not None and values.kind(arg) in (Kind.MODEL, Kind.MOVED, Kind.PREPARED):
                return True
        return False

    def engine_batch_param(self, func: cst.FunctionDef) -> int | None:
        ref = self._ref(func)
        return self.view.engine_batch_param(ref) if ref else None

    def engine_arguments(self, call: cst.Call) -> list[tuple[cst.BaseExpression, int]]:
        found = self._callee_target_and_shift(call)
        if found is None:
            return []
        path, qual = found[0].split(":", 1)
        record = self.view.function(path, qual)
        if not record or not record.get("engines"):
            return []
        out = []
        for i, batch in record["engines"]:
            arg = _argument_at(call, record, i, found[1])
            if arg is not None:
                out.append((arg, batch))
        return out

    def _callee_targets(self, call: cst.Call, picked: bool = True) -> list[tuple[str, int]]:
        """Every project function of another module ``call`` may run, with how many leading
        parameters the call fills itself (one per class of an object that may be one of
        several); ``picked=False`` leaves out what the summary resolves from a picked value."""
        if self._names is None:
            self._names = CalleeNames(self.analysis, self.path)
        callee = self._names.callee(call)
        if callee is None and picked:
            record = self.view.call_record(self.path, self.analysis.index.seq(call))
            if record is not None and record["callee"].startswith("%"):
                return self.view.call_targets_of(record["callee"], self.path, record["bound"], record.get("value"))
        if callee is None or callee.startswith(":"):
            return []  # this module's own functions are the per-module analysis's to judge
        return self.view.call_targets_of(callee, self.path, self._names.bound(call, callee))

    def _callee_target_and_shift(self, call: cst.Call) -> tuple[str, int] | None:
        """The one project function ``call`` runs by name and how many leading parameters it
        fills itself (None: none, or several)."""
        found = self._callee_targets(call, picked=False)
        return found[0] if len(found) == 1 else None

    def is_step_like(self, qualname: str) -> bool:
        target = self._call_target(qualname)
        return bool(target and self.view.function_flag(target[0], "step"))

    def runs_epoch(self, call: cst.Call, values) -> bool:
        qualname = values.qualname(call.func)
        target = self._call_target(qualname) if qualname else None
        return bool(target and self.view.function_flag(target[0], "epoch"))


def _argument_at(call: cst.Call, record: dict, index: int, bound: int = 0) -> cst.BaseExpression | None:
    """What ``call`` passes for parameter ``index`` of the project function ``record`` (its
    summary), ``bound`` leading parameters filled by the call itself (a method's `self`): the
    positional argument, else the keyword of the parameter's name; None when not passed or
    not knowable (`*args` at the call site)."""
    if any(a.star for a in call.args):
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    if 0 <= index - bound < len(positional):
        return positional[index - bound]
    name = record["params"][index] if index < len(record["params"]) else None
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
