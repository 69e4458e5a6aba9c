"""The ``torch.cuda`` surface a CPU-only wheel lacks, answered as one virtual GPU would.

Training scripts query the device (``get_device_properties(0).total_memory``,
``mem_get_info()``), time steps with CUDA events, put work on side streams, seed the CUDA RNG
and mark NVTX ranges. On the CPU wheel most of these raise "Torch not compiled with CUDA
enabled"; here each gets a stand-in that keeps the script on its CUDA code path:

* device queries describe one sm_80 device with 40 GiB (A100-shaped, matching
  ``get_device_capability() == (8, 0)``), named ``virtual-cuda (torchsync-lint emulate)`` so no
  log line can pass it off as a real GPU;
* memory counters read 0 (the emulator does not model the caching allocator) and
  ``mem_get_info()`` reports the whole device free;
* ``synchronize`` of the device, a stream or an event is a sync and is recorded;
* events time with the host clock between their ``record()`` calls (the CPU ran the work
  in between), so ``start.elapsed_time(end)`` is a positive number of milliseconds;
* streams are bookkeeping only: ``torch.cuda.stream(s)`` makes ``s`` current, ``wait_stream`` /
  ``wait_event`` / ``record_stream`` do nothing (on a GPU they order device work without
  blocking the host, so there is nothing to record).

Deliberately not patched: ``torch.backends.cudnn`` (its flags are plain settings and work on
the CPU wheel; ``is_available()`` stays False, because torch's RNN modules would then call
into the missing cuDNN library), ``torch.cuda.utilization()`` (needs pynvml on a GPU too) and
``torch.Generator(device="cuda")`` (a C++ class; replacing it would break torch's own
``isinstance`` checks).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify.emulate.virtual_cuda import VIRTUAL_DEVICE, VirtualCudaState
from torchsync_lint.verify.harness_common import Patcher

DEVICE_NAME = "virtual-cuda (torchsync-lint emulate)"
CAPABILITY = (8, 0)
TOTAL_MEMORY = 40 * 2**30


@dataclass(frozen=True)
class VirtualDeviceProperties:
    """The fields of ``torch._C._CudaDeviceProperties``, for an A100-shaped device."""

    name: str = DEVICE_NAME
    major: int = CAPABILITY[0]
    minor: int = CAPABILITY[1]
    multi_processor_count: int = 108
    total_memory: int = TOTAL_MEMORY
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    max_threads_per_multi_processor: int = 2048
    gcnArchName: str = "NVIDIA CUDA"
    warp_size: int = 32
    uuid: str = "00000000-0000-0000-0000-000000000000"
    L2_cache_size: int = 40 * 2**20
    clock_rate: int = 1410000
    memory_clock_rate: int = 1215000
    memory_bus_width: int = 5120
    shared_memory_per_block: int = 48 * 2**10
    shared_memory_per_multiprocessor: int = 164 * 2**10

    def __repr__(self) -> str:  # the shape torch prints for a real device
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count})"
        )


class VirtualStream:
    """Stands in for ``torch.cuda.Stream``; ``_state``/``_current`` are bound per run (see install)."""

    _state: VirtualCudaState
    _current: list["VirtualStream"]
    _event_class: type

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = VIRTUAL_DEVICE
        self.device_index = 0
        self.device_type = 1  # c10::DeviceType::CUDA
        self.priority = priority
        self.cuda_stream = id(self)  # an opaque handle, as on a GPU

    def synchronize(self) -> None:
        self._state.record(ev.EXPLICIT_SYNC, "Stream.synchronize")

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False  # no CUDA graph is ever captured (the optimizers' step() asks)

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else self._event_class()
        event.record(self)
        return event

    # `with stream:` (torch.Stream's own context manager) selects it, like torch.cuda.stream(stream).
    def __enter__(self) -> "VirtualStream":
        self._current.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._current.pop()

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x} (virtual)>"


class VirtualEvent:
    """Stands in for ``torch.cuda.Event``; ``_state`` is bound per run (see install)."""

    _state: VirtualCudaState

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._recorded_at: float | None = None

    def record(self, stream: Any = None) -> None:
        self._recorded_at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        self._state.record(ev.EXPLICIT_SYNC, "Event.synchronize")

    def elapsed_time(self, end_event: "VirtualEvent") -> float:
        # The same preconditions as CUDA, so a script that would fail on a GPU fails here too.
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (end_event._recorded_at - self._recorded_at) * 1000.0


class _NoDeviceSwitch:
    """``torch.cuda.device(i)`` / ``device_of(t)``: there is one virtual device to switch to."""

    def __init__(self, device: Any = None) -> None:
        self.idx = 0

    def __enter__(self) -> "_NoDeviceSwitch":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


def install(patcher: Patcher, state: VirtualCudaState) -> None:
    event_class = type("Event", (VirtualEvent,), {"_state": state})
    stream_class = type("Stream", (VirtualStream,), {"_state": state, "_current": [], "_event_class": event_class})
    default_stream = stream_class()
    current: list[VirtualStream] = stream_class._current
    current.append(default_stream)

    @contextlib.contextmanager
    def stream(selected: Any = None) -> Iterator[Any]:
        if selected is None:
            yield None
            return
        current.append(selected)
        try:
            yield selected
        finally:
            current.pop()

    def set_stream(selected: Any) -> None:
        if selected is not None:
            current[-1] = selected

    def synchronize(device: Any = None) -> None:
        state.record(ev.EXPLICIT_SYNC, "torch.cuda.synchronize")

    nvtx_depth = [0]

    def range_push(message: str) -> int:
        nvtx_depth[0] += 1
        return nvtx_depth[0] - 1

    def range_pop() -> int:
        nvtx_depth[0] = max(0, nvtx_depth[0] - 1)
        return nvtx_depth[0]

    properties = VirtualDeviceProperties()
    queries: dict[str, Any] = {
        "is_available": lambda: True,
        "init": lambda: None,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "device": _NoDeviceSwitch,
        "device_of": _NoDeviceSwitch,
        "get_device_name": lambda device=None: DEVICE_NAME,
        "get_device_capability": lambda device=None: CAPABILITY,
        "get_device_properties": lambda device=None: properties,
        "is_bf16_supported": lambda *a, **k: True,
        "synchronize": synchronize,
        "Stream": stream_class,
        "Event": event_class,
        "current_stream": lambda device=None: current[-1],
        "default_stream": lambda device=None: default_stream,
        "stream": stream,
        "StreamContext": stream,
        "set_stream": set_stream,
        "is_current_stream_capturing": lambda: False,
        "set_sync_debug_mode": lambda mode: None,
        "get_sync_debug_mode": lambda: 0,
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state": lambda new_state, device="cuda": None,
        "set_rng_state_all": lambda new_states: None,
        "ipc_collect": lambda: None,
    }
    memory: dict[str, Any] = {
        "mem_get_info": lambda device=None: (TOTAL_MEMORY, TOTAL_MEMORY),
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "memory_stats": lambda device=None: {},
        "memory_summary": lambda device=None, abbreviated=False: "virtual-cuda (torchsync-lint emulate): memory is not tracked\n",
        "reset_peak_memory_stats": lambda device=None: None,
        "reset_max_memory_allocated": lambda device=None: None,
        "reset_max_memory_cached": lambda device=None: None,
        "reset_accumulated_memory_stats": lambda device=None: None,
        "empty_cache": lambda: None,
        "set_per_process_memory_fraction": lambda fraction, device=None: None,
    }
    for name, value in {**queries, **memory}.items():
        patcher.set(torch.cuda, name, value)
    # torch's device-generic API: libraries ask it first (accelerate >= 1.16 picks its device from
    # `torch.accelerator.current_accelerator()`), and on a CUDA machine it answers with the GPU.
    generic: dict[str, Any] = {
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
        "current_device_idx": lambda: 0,
        "set_device_index": lambda device: None,
        "set_device_idx": lambda device: None,
        "synchronize": synchronize,
        "current_stream": lambda device=None: current[-1],
        "set_stream": set_stream,
        **{name: value for name, value in memory.items() if name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "empty_cache")},
    }
    accelerator = getattr(torch, "accelerator", None)
    for name, value in generic.items():
        if accelerator is not None and hasattr(accelerator, name):
            patcher.set(accelerator, name, value)
    for name, value in memory.items():  # `from torch.cuda.memory import mem_get_info` too
        if hasattr(torch.cuda.memory, name):
            patcher.set(torch.cuda.memory, name, value)
    # Tells the caching allocator a side stream uses the tensor: no host work on a GPU. The C
    # binding rejects the stand-in stream before any torch-function mode sees the call.
    patcher.set(torch.Tensor, "record_stream", lambda self, stream: None)
    nvtx = torch.cuda.nvtx
    patcher.set(nvtx, "range_push", range_push)
    patcher.set(nvtx, "range_pop", range_pop)
    patcher.set(nvtx, "mark", lambda message: None)
    patcher.set(nvtx, "range_start", lambda message: 0)
    patcher.set(nvtx, "range_end", lambda range_id: None)
