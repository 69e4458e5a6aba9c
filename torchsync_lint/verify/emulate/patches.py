"""Patches that let an unmodified "cuda" training script run on a CPU-only torch wheel.

Each patch keeps the user's intent visible to the recorder:
* ``torch.cuda`` answers as one virtual GPU (cuda_api.py): ``is_available()`` is True, so the
  script picks its cuda code path; device, memory, stream, event, RNG and NVTX calls work;
  ``synchronize`` of the device, a stream or an event records an explicit sync;
* ``torch.compile`` / ``nn.Module.compile`` return the model unchanged: it runs eagerly, and
  the report says so at that line (an ``emulated`` note). The syncs of eager mode are the ones
  a compiled model keeps: dynamo breaks its graph at every host read;
* ``GradScaler.step`` labels its one sync per step: ``_maybe_opt_step`` reads ``found_inf``
  with ``.item()`` on the device, a real D2H sync on a GPU too, recorded as a ``scalar-read``
  at the ``scaler.step(...)`` line (an optimizer with ``_step_supports_amp_scaling``, e.g. a
  fused Adam, takes ``found_inf`` as a tensor and does not sync);
* ``nn.Module.to/.cuda`` run on CPU, then tag parameters, buffers and torchmetrics states
  as virtual-cuda and point each ``Metric``'s device at cuda, so torchmetrics'
  ``torch.as_tensor(x, device=self.device)`` is seen as the host-to-device copy it is;
* ``nn.Parameter`` keeps the tag of the tensor it wraps (``nn.Linear(..., device="cuda")``);
* ``DataLoader`` loads in the main process (so transforms run under the modes) but remembers
  the user's ``num_workers``/``pin_memory``; its batches carry their loader of origin.
* ``torch.distributed``: the CPU wheel has no NCCL, so a script that picks ``nccl`` because
  CUDA "is available" gets ``gloo`` instead, and DDP forgets its CUDA ``device_ids``. Where the
  script asked for NCCL, ``barrier()`` (the host waits on the device for it) and the
  ``*_object`` collectives (they pickle through device tensors read back on the host) record a
  ``distributed-sync``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn as nn

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify.emulate import cuda_api, library_hooks
from torchsync_lint.verify.emulate.virtual_cuda import VIRTUAL_DEVICE, LoaderOrigin, VirtualCudaState, is_cuda_device
from torchsync_lint.verify.harness_common import LoaderSettings, Patcher, StepClock, instrument_dataloader


# Global settings scripts flip (cudnn.benchmark = True, TF32 matmuls): plain flags on the CPU
# wheel too, so they just work; saved and restored so an in-process run leaves none behind.
_BACKEND_FLAGS = (
    ("cudnn", "benchmark"),
    ("cudnn", "deterministic"),
    ("cudnn", "allow_tf32"),
    ("cudnn", "enabled"),
    ("cuda.matmul", "allow_tf32"),
    ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
    ("cuda.matmul", "allow_bf16_reduced_precision_reduction"),
)


def _flag_owner(path: str) -> Any:
    owner = torch.backends
    for part in path.split("."):
        owner = getattr(owner, part)
    return owner


def backend_flags() -> dict:
    saved: dict = {(path, name): getattr(_flag_owner(path), name) for path, name in _BACKEND_FLAGS}
    saved["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return saved


def restore_backend_flags(saved: dict) -> None:
    for key, value in saved.items():
        if key == "float32_matmul_precision":
            torch.set_float32_matmul_precision(value)
        else:
            setattr(_flag_owner(key[0]), key[1], value)


def _metric_modules(module: nn.Module) -> list[nn.Module]:
    # torchmetrics Metric duck-typed, so this works without importing torchmetrics.
    return [m for m in module.modules() if hasattr(m, "_defaults") and hasattr(m, "_device")]


def _tag_module(state: VirtualCudaState, module: nn.Module) -> None:
    state.tag_virtual(list(module.parameters()))
    state.tag_virtual(list(module.buffers()))
    for metric in _metric_modules(module):
        metric._device = VIRTUAL_DEVICE
        state.tag_virtual(list(metric._defaults.values()))
        state.tag_virtual([getattr(metric, name) for name in metric._defaults])


def _without_nccl(backend: Any) -> Any:
    # "nccl", Backend.NCCL, or a per-device spec such as "cpu:gloo,cuda:nccl"
    if isinstance(backend, str) and "nccl" in backend.lower():
        return backend.lower().replace("nccl", "gloo")
    return backend


@contextlib.contextmanager
def _allocating_on_device(state: VirtualCudaState) -> Any:
    state.device_allocations += 1
    try:
        yield
    finally:
        state.device_allocations -= 1


def _install_distributed(patcher: Patcher, state: VirtualCudaState) -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    from torch.nn.parallel import DistributedDataParallel

    original_init_process_group = dist.init_process_group
    original_new_group = dist.new_group
    original_ddp_init = DistributedDataParallel.__init__
    original_ddp_pre_forward = DistributedDataParallel._pre_forward
    asked_for_nccl = [False]

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        backend = args[0] if args else kwargs.get("backend")
        asked_for_nccl[0] = _without_nccl(backend) != backend
        if args:
            args = (_without_nccl(args[0]), *args[1:])
        if "backend" in kwargs:
            kwargs["backend"] = _without_nccl(kwargs["backend"])
        if is_cuda_device(kwargs.get("device_id")):
            kwargs["device_id"] = None
        return original_init_process_group(*args, **kwargs)

    def new_group(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = _without_nccl(kwargs["backend"])
        return original_new_group(*args, **kwargs)

    def ddp_init(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        # DistributedDataParallel(module, device_ids=None, output_device=None, ...): the module
        # really lives on the CPU, where device ids are rejected.
        args = tuple(None if i < 2 else a for i, a in enumerate(args))
        kwargs.update({k: None for k in ("device_ids", "output_device") if k in kwargs})
        # The reducer allocates its gradient buckets in C++ on the parameters' device.
        with _allocating_on_device(state):
            original_ddp_init(self, module, *args, **kwargs)

    def ddp_pre_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _allocating_on_device(state):  # bucket rebuild after the first iteration
            return original_ddp_pre_forward(self, *args, **kwargs)

    def host_waits(name: str, why: str) -> None:
        original = getattr(dist, name)

        def collective(*args: Any, **kwargs: Any) -> Any:
            if asked_for_nccl[0]:
                state.record(ev.DISTRIBUTED_SYNC, f"dist.{name} ({why})")
            return original(*args, **kwargs)

        patcher.set(dist, name, collective)

    host_waits("barrier", "NCCL: the host waits for the device")
    for name in ("all_gather_object", "gather_object", "broadcast_object_list", "scatter_object_list"):
        if hasattr(dist, name):
            host_waits(name, "NCCL: objects travel as device tensors read back on the host")
    patcher.set(dist, "is_nccl_available", lambda: True)
    patcher.set(dist, "init_process_group", init_process_group)
    patcher.set(dist, "new_group", new_group)
    patcher.set(DistributedDataParallel, "__init__", ddp_init)
    patcher.set(DistributedDataParallel, "_pre_forward", ddp_pre_forward)


def _install_compile(patcher: Patcher, state: VirtualCudaState) -> None:
    def compile_eagerly(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        state.note("torch.compile: the model runs eagerly under emulation (no compiler on this backend)")
        if model is None:  # @torch.compile(mode=...) used as a decorator factory
            return lambda fn: fn
        return model

    def module_compile(self: nn.Module, *args: Any, **kwargs: Any) -> None:
        state.note("nn.Module.compile: the model runs eagerly under emulation (no compiler on this backend)")

    patcher.set(torch, "compile", compile_eagerly)
    patcher.set(nn.Module, "compile", module_compile)


def _install_grad_scaler(patcher: Patcher, state: VirtualCudaState) -> None:
    from torch.amp.grad_scaler import GradScaler

    original = GradScaler._maybe_opt_step

    def maybe_opt_step(self: Any, *args: Any, **kwargs: Any) -> Any:
        with state.context("GradScaler.step (found_inf.item())"):
            return original(self, *args, **kwargs)

    patcher.set(GradScaler, "_maybe_opt_step", maybe_opt_step)


def install(patcher: Patcher, state: VirtualCudaState, clock: StepClock) -> None:
    cuda_api.install(patcher, state)
    _install_compile(patcher, state)
    _install_grad_scaler(patcher, state)
    library_hooks.install(patcher, state)

    original_to = nn.Module.to

    def module_to(self: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:
        if args and isinstance(args[0], torch.Tensor):
            target, dtype, non_blocking = (VIRTUAL_DEVICE if state.is_virtual(args[0]) else "cpu"), args[0].dtype, False
            memory_format = None
        else:
            target, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
        if not is_cuda_device(target):
            return original_to(self, *args, **kwargs)
        for metric in _metric_modules(self):
            metric._device = torch.device("cpu")  # _apply builds a probe tensor on metric.device
        move_kwargs: dict[str, Any] = {"device": "cpu", "dtype": dtype, "non_blocking": non_blocking}
        if memory_format is not None:
            move_kwargs["memory_format"] = memory_format
        # The move itself is a model/metric placement (setup), not a per-step hazard: run it
        # without the function mode so it records nothing, then tag what it produced.
        with torch._C.DisableTorchFunction():
            out = original_to(self, **move_kwargs)
        _tag_module(state, self)
        return out

    def module_cuda(self: nn.Module, device: Any = None) -> nn.Module:
        return module_to(self, "cuda" if device is None else device)

    patcher.set(nn.Module, "to", module_to)
    patcher.set(nn.Module, "cuda", module_cuda)

    original_parameter_new = nn.Parameter.__new__

    def parameter_new(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        param = original_parameter_new(cls, data, requires_grad)
        if state.is_virtual(data):
            state.tag_virtual(param)
        return param

    patcher.set(nn.Parameter, "__new__", staticmethod(parameter_new))

    def on_iter(loader: Any, settings: LoaderSettings) -> None:
        if settings.num_workers == 0:
            state.record(ev.DATALOADER_MAIN_PROCESS, "DataLoader.__iter__ (num_workers=0)", line=settings.line)

    def on_batch(settings: LoaderSettings, batch: Any) -> Any:
        origin = LoaderOrigin(settings.line, settings.pin_memory)
        for leaf in torch.utils._pytree.tree_leaves(batch):
            if isinstance(leaf, torch.Tensor) and not state.is_virtual(leaf):
                state.loader_origin[leaf] = origin
                if settings.pin_memory:
                    state.pinned[leaf] = True
        return batch

    instrument_dataloader(patcher, clock, state.user_line, force_main_process=True, on_iter=on_iter, on_batch=on_batch)
    _install_distributed(patcher, state)
