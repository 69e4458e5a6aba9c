"""Logging libraries that read a tensor after the call that was handed it (emulate backend).

Most sinks read the tensor inside the call (`writer.add_scalar`, `wandb.log`), so the frame
finder already puts the read at the user's line. Lightning stores what `self.log(name, t)` is
given and reads it later: the progress bar calls `.item()` after the step, when the only frame
of the user's file on the stack is `trainer.fit(...)`. To report that read where the hazard and
its cure are (the `self.log` line), the tensor Lightning keeps for the step is remembered with
the line that logged it (``VirtualCudaState.read_lines``), and a sync on it is recorded there.

Lightning is patched when the script imports it (a meta-path hook), so a script that never
imports it pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from torchsync_lint.verify.emulate.virtual_cuda import VirtualCudaState
from torchsync_lint.verify.harness_common import Patcher

# lightning 2.x (and the standalone pytorch_lightning package): _ResultCollection.update_metrics
# stores the value of each self.log call; `_forward_cache` is what the step's readers convert.
LIGHTNING_RESULTS = ("lightning.pytorch.trainer.connectors.logger_connector.result", "pytorch_lightning.trainer.connectors.logger_connector.result")


def install(patcher: Patcher, state: VirtualCudaState, on_device: Callable[[Any], bool] | None = None) -> None:
    """``on_device``: whether a stored value is a GPU tensor (default: the emulator's virtual
    tag; the cuda backend passes ``Tensor.is_cuda``)."""
    on_device = on_device or state.is_virtual

    def patch_results(module: Any) -> None:
        results = module._ResultCollection
        original = results.update_metrics

        def update_metrics(self: Any, key: str, value: Any, batch_size: int) -> None:
            original(self, key, value, batch_size)
            stored = getattr(self[key], "_forward_cache", None)
            if on_device(stored):
                state.read_lines[stored] = state.user_line()

        patcher.set(results, "update_metrics", update_metrics)

    after_import(patcher, LIGHTNING_RESULTS, patch_results)


def after_import(patcher: Patcher, names: tuple[str, ...], patch: Callable[[Any], None]) -> None:
    """Call ``patch(module)`` for each module in ``names``, now if it is imported, else right
    after the script imports it."""
    pending = set()
    for name in names:
        if name in sys.modules:
            patch(sys.modules[name])
        else:
            pending.add(name)
    if pending:
        patcher.set(sys, "meta_path", [_PatchOnImport(pending, patch), *sys.meta_path])


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str], patch: Callable[[Any], None]) -> None:
        self.names = names
        self.patch = patch

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.names:
            return None
        self.names.discard(fullname)  # find the real spec without finding ourselves again
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch

        class PatchingLoader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                patch(module)

        spec.loader = PatchingLoader()
        return spec
