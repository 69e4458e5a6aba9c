"""Child-process entry point of the cuda backend (one pass per process).

    python -m torchsync_lint.verify.cuda.harness --mode attribute|profile|time --out F SCRIPT [ARGS...]

* ``attribute``: GPU-trace sync callbacks (stream/device/event) + ``set_sync_debug_mode("warn")``
  record every real sync with the user's line, once (the two signals of one stream sync are
  paired: sync_labels.SyncSignalPairing); a dispatch mode labels it with the op that
  was running (sync_labels.py) and records what the sync hooks cannot see: non_blocking
  copies from pageable memory, batches of an unpinned DataLoader, host-normalised copies.
* ``profile``: ``torch.profiler`` with CUDA sync events and step annotations; exports the
  Chrome trace and writes its steady-state summary (trace.py).
* ``time``: a CUDA timing event at every step-clock tick, nothing else (no modes, no
  profiler), read once at the end; the parent turns the ticks into step times.

The modes and hooks cost time, so only ``time`` runs are used for cost. Without a GPU the
harness still runs (callbacks never fire, timing falls back to the host clock), which is
how its plumbing is tested on CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify import steady_state
from torchsync_lint.verify.frames import UserFrameFinder
from torchsync_lint.verify.harness_common import (
    LoaderSettings,
    Patcher,
    StepClock,
    harness_main,
    instrument_dataloader,
    run_record,
    run_script,
    write_json,
)

SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"


def attribute(script: str, script_args: list[str], extra_sys_path: list[str]) -> dict:
    import torch
    import torch.utils._pytree as pytree
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from torchsync_lint.verify.cuda import sync_labels
    from torchsync_lint.verify.emulate import library_hooks, sinks
    from torchsync_lint.verify.emulate.virtual_cuda import (
        HOST_DATA_FACTORIES,
        SAME_VALUE_OPS,
        TORCH_DIR,
        LoaderOrigin,
        VirtualCudaState,
        is_cuda_device,
        track_host_provenance,
    )
    from torchsync_lint.verify.sites import SiteFinder, with_sites

    finder = UserFrameFinder(script)
    clock = StepClock()
    # A sync on autograd's device thread (a CUDA backward) belongs to the main thread's line.
    state = VirtualCudaState(user_line=lambda: finder.line_or_main_thread(2), clock=clock.snapshot)
    sites = SiteFinder(script)
    state.locate = sites.locate

    def is_cuda(value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.is_cuda

    class OpLabels(TorchDispatchMode):
        """Remembers which op is running (to label syncs) and tracks host provenance."""

        def __init__(self) -> None:
            super().__init__()
            # (op, copy direction, line of the logging call whose stored value the op reads)
            self.stack: list[tuple[str, str | None, int | None]] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            name = func._schema.name
            direction = None
            if name == "aten::_to_copy" and args:
                target = kwargs.get("device")
                source = args[0]
                if target is not None and torch.device(target).type == "cuda" and not is_cuda(source):
                    direction = "h2d"
                    self._host_to_device(source, bool(kwargs.get("non_blocking", False)), name)
                elif target is not None and torch.device(target).type == "cpu" and is_cuda(source):
                    direction = "d2h"
            elif name == "aten::copy_" and len(args) > 1:
                if is_cuda(args[0]) and isinstance(args[1], torch.Tensor) and not is_cuda(args[1]):
                    direction = "h2d"
                    non_blocking = bool(args[2]) if len(args) > 2 else bool(kwargs.get("non_blocking", False))
                    self._host_to_device(args[1], non_blocking, name)
                elif is_cuda(args[1]) and not is_cuda(args[0]):
                    direction = "d2h"
            leaves = pytree.tree_leaves((args, kwargs))
            read_line = state.read_line(leaves) if state.read_lines else None
            self.stack.append((name, direction, read_line))
            try:
                out = func(*args, **kwargs)
            finally:
                self.stack.pop()
            if read_line is not None and name in SAME_VALUE_OPS and isinstance(out, torch.Tensor):
                state.read_lines[out] = read_line  # Lightning reads `cache.detach()` of what it stored
            if not any(is_cuda(leaf) for leaf in leaves):
                track_host_provenance(state, leaves, out)
            return out

        def _host_to_device(self, source: Any, non_blocking: bool, op: str) -> None:
            state.record_host_to_device(source, non_blocking, op, pinned=source.is_pinned(), record_blocking=False)

        def current(self) -> tuple[str | None, str | None, int | None]:
            return self.stack[-1] if self.stack else (None, None, None)

    class FactoryLabels(TorchFunctionMode):
        """``torch.tensor(host data, device=cuda)`` (and as_tensor, asarray, and new_tensor on a
        CUDA tensor or with a CUDA device) copies inside the C++ constructor, where no
        dispatched op is running: name the copy here so its stream sync is labelled a blocking
        host-to-device copy."""

        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if sync_labels.copies_host_data_to_cuda(name, args, kwargs, HOST_DATA_FACTORIES, is_cuda_device):
                labels.stack.append((sync_labels.factory_label(name), "h2d", None))
                try:
                    return func(*args, **kwargs)
                finally:
                    labels.stack.pop()
            return func(*args, **kwargs)

    labels = OpLabels()

    def python_callee() -> str | None:
        stack = []
        frame = sys._getframe(2)
        while frame is not None:
            stack.append((frame.f_code.co_filename, frame.f_code.co_name))
            frame = frame.f_back
        return sync_labels.innermost_torch_function(stack, TORCH_DIR)

    signals = sync_labels.SyncSignalPairing()

    def on_sync(source: str) -> None:
        # torch swallows (and logs) exceptions raised by GPU-trace callbacks: a bug here
        # would silently drop evidence, so keep this path minimal.
        if signals.callback(source):
            op, direction, read_line = labels.current()
            kind, label = sync_labels.classify_sync(source, op, direction, python_callee())
            state.record(kind, label, line=read_line)

    def on_sync_debug_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if SYNC_DEBUG_MESSAGE in str(message):
            if signals.warning():  # a sync whose GPU-trace callback has not (yet) fired
                op, direction, read_line = labels.current()
                kind, label = sync_labels.classify_sync(sync_labels.STREAM, op, direction, python_callee())
                state.record(kind, f"sync_debug_mode: {label}", line=read_line)
        else:
            original_showwarning(message, category, filename, lineno, file, line)

    def on_iter(loader: Any, settings: LoaderSettings) -> None:
        if settings.num_workers == 0:
            state.record(ev.DATALOADER_MAIN_PROCESS, "DataLoader.__iter__ (num_workers=0)", line=settings.line)

    def on_batch(settings: LoaderSettings, batch: Any) -> Any:
        origin = LoaderOrigin(settings.line, settings.pin_memory)
        for leaf in pytree.tree_leaves(batch):
            if isinstance(leaf, torch.Tensor) and not leaf.is_cuda:
                state.loader_origin[leaf] = origin
        return batch

    patcher = Patcher()
    original_showwarning = warnings.showwarning
    clock.install()
    # Loaders run in the main process here, as under emulation: a float that a worker process
    # normalised on the host (TSL304) can only be traced to the line that made it in this
    # process. The settings reported (on_iter) stay the script's own; the profile and time
    # passes keep its workers.
    instrument_dataloader(
        patcher, clock, state.user_line, force_main_process=True, can_pin=torch.cuda.is_available(), on_iter=on_iter, on_batch=on_batch
    )
    sinks.install(patcher, state, on_device=is_cuda)
    # As under emulation: a float a torchvision transform makes from uint8 is attributed to the
    # script line that built the transform (the finding's line), not to the `for batch in
    # loader` line the transform runs under; torchmetrics' cross-rank gather is named.
    library_hooks.install(patcher, state)
    if torch.cuda.is_available():
        from torch.cuda import _gpu_trace

        # The callbacks cannot be unregistered; this process exits after one script.
        torch._C._activate_gpu_trace()
        _gpu_trace.register_callback_for_stream_synchronization(lambda stream: on_sync(sync_labels.STREAM))
        _gpu_trace.register_callback_for_device_synchronization(lambda: on_sync(sync_labels.DEVICE))
        _gpu_trace.register_callback_for_event_synchronization(lambda event: on_sync(sync_labels.EVENT))
        torch.cuda.set_sync_debug_mode("warn")
    warnings.simplefilter("always")
    patcher.set(warnings, "showwarning", on_sync_debug_warning)
    try:
        with FactoryLabels(), labels:
            outcome = run_script(script, script_args, extra_sys_path)
    finally:
        if torch.cuda.is_available():
            torch.cuda.set_sync_debug_mode("default")
        patcher.restore()
        clock.uninstall()
    record = with_sites(run_record("cuda", clock, state, outcome), state, sites)
    record["sync_signals"] = signals.to_json()
    return record


def export_trace(prof: Any, path: str) -> str:
    """Export the Chrome trace; on torch builds whose export trips over an undecodable event
    name (UnicodeDecodeError, seen with 2.13), write the events we can decode instead."""
    try:
        prof.export_chrome_trace(path)
        return "export_chrome_trace"
    except UnicodeDecodeError:
        pass
    events = []
    for event in prof.profiler.kineto_results.events():
        try:
            name = event.name()
        except UnicodeDecodeError:
            continue
        events.append(
            {
                "ph": "X",
                "name": name,
                "cat": str(getattr(event, "activity_type", lambda: "")() or ""),
                "ts": event.start_ns() / 1000.0,
                "dur": event.duration_ns() / 1000.0,
                "args": {"bytes": int(getattr(event, "nbytes", lambda: 0)() or 0)},
            }
        )
    write_json(path, {"traceEvents": events})
    return "fallback (UnicodeDecodeError in export_chrome_trace)"


def profile(script: str, script_args: list[str], extra_sys_path: list[str], trace_path: str, warmup: int) -> dict:
    import torch
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import ProfilerActivity, record_function

    from torchsync_lint.verify.cuda import trace

    clock = StepClock()
    clock.listeners.append(lambda family, count: record_function(f"torchsync::{family}={count}").__enter__().__exit__(None, None, None))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    patcher = Patcher()
    clock.install()
    instrument_dataloader(patcher, clock, lambda: 0, force_main_process=False)
    try:
        with torch.profiler.profile(
            activities=activities, experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)
        ) as prof:
            outcome = run_script(script, script_args, extra_sys_path)
    finally:
        patcher.restore()
        clock.uninstall()
    record = run_record("cuda", clock, None, outcome)
    os.makedirs(os.path.dirname(os.path.abspath(trace_path)), exist_ok=True)
    record["trace_export"] = export_trace(prof, trace_path)
    record["trace_path"] = trace_path
    record["profile"] = trace.summarize(trace_path, warmup).to_json()
    return record


def time_steps(script: str, script_args: list[str], extra_sys_path: list[str]) -> dict:
    import torch

    use_cuda = torch.cuda.is_available()
    ticks: dict[str, list[Any]] = {steady_state.OPTIMIZER: [], steady_state.BATCHES: []}

    def tick(family: str, count: int) -> None:
        if family not in ticks:
            return  # loop starts are not step boundaries
        if use_cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()  # enqueued on the stream: no host wait
            ticks[family].append(event)
        else:
            ticks[family].append(time.perf_counter() * 1000.0)

    clock = StepClock()
    clock.listeners.append(tick)
    patcher = Patcher()
    clock.install()
    instrument_dataloader(patcher, clock, lambda: 0, force_main_process=False)
    try:
        outcome = run_script(script, script_args, extra_sys_path)
    finally:
        patcher.restore()
        clock.uninstall()
    if use_cuda:
        torch.cuda.synchronize()
    tick_ms = {}
    for family, marks in ticks.items():
        if marks and use_cuda:
            tick_ms[family] = [marks[0].elapsed_time(m) for m in marks]
        else:
            tick_ms[family] = [m - marks[0] for m in marks] if marks else []
    record = run_record("cuda", clock, None, outcome)
    record["tick_ms"] = tick_ms
    record["timer"] = "cuda-events" if use_cuda else "host-clock"
    return record


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=("attribute", "profile", "time"), required=True)
    parser.add_argument("--trace", default=None)
    parser.add_argument("--warmup", type=int, default=steady_state.DEFAULT_WARMUP)


def _run(args: argparse.Namespace) -> dict:
    if args.mode == "attribute":
        return attribute(args.script, args.script_args, args.sys_path)
    if args.mode == "profile":
        return profile(args.script, args.script_args, args.sys_path, args.trace or args.out + ".trace.json", args.warmup)
    return time_steps(args.script, args.script_args, args.sys_path)


def main(argv: list[str] | None = None) -> int:
    return harness_main("torchsync_lint.verify.cuda.harness", argv, _run, _add_arguments)


if __name__ == "__main__":
    sys.exit(main())
