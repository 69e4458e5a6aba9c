"""Patches for libraries a script imports after the harness has started (torchvision, torchmetrics).

Importing them up front would cost every script their import time, so each patch waits for
its module: an import hook runs it right after the module first executes (or at once when the
module is already loaded). What is patched, and why:

* torchvision transforms that make float images on the host (TSL304's hazard). TSL304 is
  reported where the transform is *built* (``transforms.ToTensor(),`` in a ``Compose`` list),
  while the conversion runs later inside torchvision, called by the DataLoader, where the
  innermost frame of the script is the ``for batch in loader`` line. So each listed transform
  remembers the script line that built it, and while it runs, a float it makes from uint8 is
  attributed to that line (``VirtualCudaState.transform_lines``). When the batch collated
  from those floats reaches a host-to-device copy, the evidence lands on the transform's line
  by provenance, not by guessing.
* torchmetrics ``Metric._sync_dist`` (the cross-rank gather inside ``compute()`` under DDP):
  the syncs it makes (an NCCL barrier, the shapes it copies to the device and compares on the
  host) are recorded as ``distributed-sync`` evidence, so the report can tell a metric computed
  every N steps (gated: the expected cost) from one computed every step.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.nn as nn
import torch.utils._pytree as pytree

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify.emulate.virtual_cuda import VirtualCudaState
from torchsync_lint.verify.harness_common import Patcher

# Transforms whose call can turn a uint8 image into a float one on the host (or normalise a
# float one), by the module that exports them. Library knowledge as data: add rows, not code.
HOST_FLOAT_TRANSFORMS: dict[str, tuple[str, ...]] = {
    "torchvision.transforms": ("ToTensor", "ConvertImageDtype", "Normalize"),
    "torchvision.transforms.v2": ("ToTensor", "ToDtype", "ConvertImageDtype", "Normalize"),
}
METRIC_MODULE = "torchmetrics.metric"


class _NotifyingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then calls ``on_loaded(module)``."""

    def __init__(self, loader: Any, on_loaded: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._on_loaded = on_loaded

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._on_loaded(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resource readers...
        return getattr(self._loader, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback once a named module has been executed by the import system."""

    def __init__(self, callbacks: dict[str, Callable[[ModuleType], None]]) -> None:
        self._callbacks = callbacks
        self._finding: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        callback = self._callbacks.get(fullname)
        if callback is None or fullname in self._finding:
            return None
        self._finding.add(fullname)  # find_spec below walks sys.meta_path again, ourselves included
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding.discard(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _NotifyingLoader(spec.loader, callback)
        return spec


def install(patcher: Patcher, state: VirtualCudaState) -> None:
    callbacks: dict[str, Callable[[ModuleType], None]] = {
        name: (lambda module, classes=classes: _patch_transforms(patcher, state, module, classes))
        for name, classes in HOST_FLOAT_TRANSFORMS.items()
    }
    callbacks[METRIC_MODULE] = lambda module: _patch_metric_sync(patcher, state, module)
    pending = {}
    for name, callback in callbacks.items():
        module = sys.modules.get(name)
        if module is not None:
            callback(module)
        else:
            pending[name] = callback
    if pending:
        patcher.set(sys, "meta_path", [AfterImport(pending), *sys.meta_path])


def _patch_transforms(patcher: Patcher, state: VirtualCudaState, module: ModuleType, names: tuple[str, ...]) -> None:
    built_at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # transform -> script line that built it
    for name in names:
        cls = getattr(module, name, None)
        if not isinstance(cls, type) or "_torchsync_patched" in vars(cls):
            continue  # v2 re-exports some v1 classes: patch each class once
        patcher.set(cls, "_torchsync_patched", True)
        patcher.set(cls, "__init__", _remember_line(cls.__init__, state, built_at))
        method = "forward" if issubclass(cls, nn.Module) else "__call__"
        patcher.set(cls, method, _attribute_floats(getattr(cls, method), state, built_at))


def _remember_line(original_init: Callable, state: VirtualCudaState, built_at: weakref.WeakKeyDictionary) -> Callable:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        line = state.user_line()
        if line:
            try:
                built_at[self] = line
            except TypeError:  # a subclass that is unhashable or not weak-referenceable
                pass

    return init


def _attribute_floats(original_call: Callable, state: VirtualCudaState, built_at: weakref.WeakKeyDictionary) -> Callable:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            line = built_at.get(self)
        except TypeError:
            line = None
        if line is None:
            return original_call(self, *args, **kwargs)
        state.transform_lines.append(line)
        try:
            out = original_call(self, *args, **kwargs)
        finally:
            state.transform_lines.pop()
        _carry_across_the_call(state, (args, kwargs), out, line)
        return out

    return call


def _carry_across_the_call(state: VirtualCudaState, inputs: Any, out: Any, line: int) -> None:
    """A float the transform returns for a uint8 (or host-normalised) input is host-normalised,
    whatever tensor objects it made on the way. The ops inside usually carry it already, but
    torchvision v2 runs each kernel on ``image.as_subclass(torch.Tensor)`` and wraps the result
    with ``output.as_subclass(type(image))``: new tensor objects on both sides (seen on an H100:
    TSL304 of a ``v2.ToDtype`` line went unconfirmed), so the provenance is set at the boundary."""
    made_at = None
    for leaf in pytree.tree_leaves(inputs):
        if isinstance(leaf, torch.Tensor):
            if leaf in state.host_normalized:
                made_at = state.host_normalized[leaf]
                break
            if leaf.dtype == torch.uint8:
                made_at = line
    if made_at is None:
        return
    for result in pytree.tree_leaves(out):
        if isinstance(result, torch.Tensor) and result.is_floating_point() and result not in state.host_normalized:
            state.host_normalized[result] = made_at


def _patch_metric_sync(patcher: Patcher, state: VirtualCudaState, module: ModuleType) -> None:
    metric_cls = getattr(module, "Metric", None)
    if metric_cls is None or not hasattr(metric_cls, "_sync_dist"):
        return
    original = metric_cls._sync_dist

    def sync_dist(self: Any, *args: Any, **kwargs: Any) -> None:
        with state.context("torchmetrics Metric._sync_dist", ev.DISTRIBUTED_SYNC):
            return original(self, *args, **kwargs)

    patcher.set(metric_cls, "_sync_dist", sync_dist)
