"""What the rest of the project says about one module: the interface the per-module analysis
consults at its boundaries (imported project symbols, call sites in other modules, loops in
other modules that read a loader built here). ``NULL_ENV`` says nothing: a module linted on its
own. The project view (torchsync_lint/project/) implements it from module summaries.

Every method answers None (or False) when it does not know: unknown stays silent.
"""

from __future__ import annotations

import libcst as cst


class Env:
    def bind(self, analysis) -> None:
        """Called once with the module analysis that consults this environment."""
    def project_uses_accelerator(self) -> bool:
        """Do the modules this one is connected to put tensors on an accelerator?"""
        return False

    # -- values -------------------------------------------------------------------------------
    def star_import(self, name: str):
        """What ``name`` is bound to by this module's `from m import *` of a project module
        (a dotted import name), or None."""
        return None

    def symbol_kind(self, qualname: str):
        """Kind of a project module's top-level name imported here (`from proj.cfg import device`)."""
        return None

    def call_kind(self, qualname: str, call: cst.Call, values):
        """Kind of the result of calling a project function or class imported here."""
        return None

    def call_mask(self, qualname: str, call: cst.Call):
        """"bool"/"uint8" when the project function ``qualname`` imported here returns a mask
        (analysis/masks.py)."""
        return None

    def call_element(self, qualname: str, call: cst.Call, position: int, values):
        """Kind of element ``position`` of a project function's (tuple) result."""
        return None

    def forward_element_is_host(self, origin: str, position: int) -> bool:
        """Does the `forward` (or `__call__`) of the project class ``origin`` return a host
        value (a number, a list, a host tensor) as element ``position`` of its tuple?"""
        return False

    def generator_source(self, call: cst.Call, values):
        """The argument of ``call`` whose items a project generator yields (`log_every(loader)`)."""
        return None

    def param_kind(self, func: cst.FunctionDef, param: cst.Param):
        """Kind of what call sites in other modules pass for ``param``."""
        return None

    def param_element(self, func: cst.FunctionDef, param: cst.Param, position: int):
        """Kind of element ``position`` of what every call site passes for ``param`` when that
        is a tuple of known shape (`to_device(batch)` returning `(ids, names, x, y)`), else None."""
        return None

    def star_kind(self, func: cst.FunctionDef, keyword: bool):
        """Kind of what call sites in other modules pass into ``func``'s `**kwargs`
        (``keyword``) or `*args` (a container: "device" when a device value is among them)."""
        return None

    def param_passed(self, func: cst.FunctionDef, param: cst.Param):
        """True when a call site in another module passes ``param``, False when none does
        (or there is none), None when that is not known."""
        return False

    def param_literals(self, func: cst.FunctionDef, param: cst.Param) -> list | None:
        """What each call site in another module passes for ``param``: a literal, or
        analysis/fixed_params.DEFAULT when it leaves the default; None when one passes
        something else (or may, through `*args`/`**kwargs`)."""
        return []

    def host_call_result(self, call: cst.Call) -> bool:
        """Does ``call`` run only project functions of another module whose every return is a
        host value (a number, a string, a dict or tuple of them)? `metrics = train(x, y)` of a
        `train` closure a factory of another module returns, returning `{"loss": float(...)}`."""
        return False

    def param_never_none(self, func: cst.FunctionDef, param: cst.Param):
        """True when every call site of ``func`` in another module passes a tensor for
        ``param`` (never `None`, never its default); False when one does not; None when no
        other module calls it."""
        return None

    def has_callers(self, func: cst.FunctionDef) -> bool:
        """Does another module of the project call ``func``?"""
        return False

    def param_device(self, func: cst.FunctionDef, param: cst.Param):
        """"cpu"/"accelerator" when call sites in other modules pass a device for ``param``."""
        return None

    def param_origin(self, func: cst.FunctionDef, param: cst.Param):
        """The constructor qualname of the object other modules pass for ``param``."""
        return None

    def attribute_kind(self, base: cst.BaseExpression, attr: str, values):
        """Kind of `base.attr` when ``base`` is an instance of a project class."""
        return None

    def self_attribute_items(self, cls: cst.ClassDef, attr: str, path: tuple[int, ...]):
        """Kind of (part ``path`` of) an item of iterating `self.<attr>` of ``cls``, when the
        project says (a project iterable class stored there)."""
        return None

    def inherited_attribute_kind(self, cls: cst.ClassDef, attr: str):
        """Kind of `self.attr` set by a project base class of ``cls``."""
        return None

    def inherited_attribute_mask(self, cls: cst.ClassDef, attr: str):
        """"bool"/"uint8" when a project base class of ``cls`` in another module stores a mask
        on `self.attr` (analysis/masks.py)."""
        return None

    def trainer_logger_states(self) -> list[str]:
        """The logger state (analysis/trainer_loggers.py) of each Lightning Trainer the modules
        connected to this one build; [] when none is known."""
        return []

    def is_module_class(self, qualname: str) -> bool:
        """Is the project class ``qualname`` an nn.Module?"""
        return False

    def is_lightning_class(self, qualname: str) -> bool:
        return False

    def derives_from(self, qualname: str, bases: frozenset[str]) -> bool:
        """Does the project class ``qualname`` derive, through project classes, from one of
        the library classes ``bases``?"""
        return False

    def metric_base(self, qualname: str):
        """For a project class deriving (through project classes) from a torchmetrics class:
        (that class's qualname, the methods the project classes define); else None."""
        return None

    def is_loader_class(self, qualname: str) -> bool:
        """Is the project class ``qualname`` a DataLoader subclass?"""
        return False

    def loader_class_settings(self, qualname: str):
        """For a project DataLoader subclass: the DataLoader keywords it sets itself; None when
        ``qualname`` is no such class."""
        return None

    # -- trackers ------------------------------------------------------------------------------
    def loader_feeds_elsewhere(self, call: cst.Call) -> bool:
        """Does another module move the batches of the DataLoader built by ``call`` to the
        device (or hand it to a trainer that does)?"""
        return False

    def fed_dataset_arguments(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The arguments of ``call`` (of a project function) that become a dataset, or part of
        one (its transform), read by a DataLoader whose batches go to the device."""
        return []

    def passes_fed_dataset_arguments(self) -> bool:
        """May ``fed_dataset_arguments`` give anything for a call of this module (asked first:
        most modules make no such call, and the rule would ask it of every call)?"""
        return False

    def fed_module_values(self) -> list[str]:
        """This module's module-level names whose values become (part of) a dataset that
        another module's device-fed loader reads (`TRAIN_TRANSFORMS = Compose([...])`)."""
        return []

    def dataset_class_fed(self, cls: cst.ClassDef) -> bool:
        """Do another module's device-fed loaders read instances of ``cls`` (or a subclass)?"""
        return False

    def function_feeds_dataset(self, func: cst.FunctionDef) -> bool:
        """Is ``func`` called from the `__getitem__` of a project dataset class a device-fed
        loader reads (so what it returns becomes a batch)?"""
        return False

    def dataset_class_in_memory(self, call: cst.Call, values) -> bool:
        """Does ``call`` build an instance of a project class whose `__getitem__` calls nothing
        (its items already in memory)?"""
        return False

    def engine_batch_param(self, func: cst.FunctionDef) -> int | None:
        """The batch parameter's position when a project engine class elsewhere is built with
        ``func`` as its process function (project/engines.py)."""
        return None

    def dataset_class_on_device(self, call: cst.Call, values) -> bool:
        """Does ``call`` build an instance of a project class whose items are tensors it keeps
        on the device (analysis/loader_datasets.items_on_device)?"""
        return False

    def dataset_class_converts(self, call: cst.Call, values) -> bool:
        """Does ``call`` build an instance of a project class whose `__getitem__` itself turns
        images into floats?"""
        return False

    def has_remote_metrics(self) -> bool:
        """Do other modules pass torchmetrics metrics to this module's functions?"""
        return False

    def param_metric_dict(self, func: cst.FunctionDef, param: cst.Param):
        """The dict of torchmetrics metrics every call site in another module passes for
        ``param`` (key -> metric sites), None when unknown."""
        return None

    def param_metrics(self, func: cst.FunctionDef, param: cst.Param):
        """The torchmetrics metrics every call site in another module passes for ``param``
        (all of one class, configuration and device), as metric sites; None when unknown."""
        return None

    # -- per-step code ------------------------------------------------------------------------
    def hot_caller(self, func: cst.FunctionDef):
        """(reason, gate, gated) when another module calls ``func`` every step (``gated``: under
        a step-interval gate there), else None."""
        return None

    def is_step_call(self, call: cst.Call) -> bool:
        """Does ``call`` run project code of another module (a function, a method of an object
        passed or stored here) that runs a training step in its own body?"""
        return False

    def hands_model_to_forward(self, call: cst.Call, values) -> bool:
        """Does ``call`` hand a model to a function of another module that calls it?"""
        return False

    def engine_arguments(self, call: cst.Call) -> list[tuple[cst.BaseExpression, int]]:
        """The arguments ``call`` (of another module's function) hands an engine that runs them
        once per batch (`create_trainer(train_step)` of `def create_trainer(f): Engine(f)`),
        each with the position of its batch parameter."""
        return []

    def is_step_like(self, qualname: str) -> bool:
        """Does the project function ``qualname`` run a training step (backward, optimizer step,
        forward) in its own body?"""
        return False

    def runs_epoch(self, call: cst.Call, values) -> bool:
        """Does ``call`` (of a project function) run a whole pass over a data loader?"""
        return False


NULL_ENV = Env()
