"""Read a Chrome trace exported by ``torch.profiler`` (plain Python, no torch).

The cuda harness runs the script under the profiler with
``_ExperimentalConfig(enable_cuda_sync_events=True)`` and drops zero-length annotations
``torchsync::optimizer=K`` / ``torchsync::batches=K`` at every step-clock tick. This module
turns the trace into per-step sync counts and host-blocked time over the steady window
(steady_state.py), which is the profiler's evidence; per-line attribution comes from the
GPU-trace callbacks, not from here.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from torchsync_lint.verify import steady_state
from torchsync_lint.verify.steady_state import SteadyWindow

# Host API calls that block the CPU until the GPU catches up.
BLOCKING_RUNTIME_CALLS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy"})
# GPU-side copies that mean the host waited or staged data: a device-to-host copy into
# pageable memory (a scalar read, .cpu(), .tolist()) and a host-to-device copy from pageable
# memory (a blocking upload). Copies to or from pinned memory can run asynchronously
# (`pin_memory=True` + `non_blocking=True`, the fix TSL302 asks for), so they are not evidence;
# kineto names copies "Memcpy HtoD (Pageable -> Device)", older builds just "Memcpy HtoD".
SYNC_MEMCPY_NAMES = frozenset({"Memcpy DtoH (Device -> Pageable)", "Memcpy HtoD (Pageable -> Device)"})
UNLABELLED_MEMCPY_NAMES = frozenset({"Memcpy DtoH", "Memcpy HtoD"})
# Kineto's cuda_sync category (only with enable_cuda_sync_events=True): "Stream Sync",
# "Event Sync", "Context Sync" block the host; "Stream Wait Event" (cudaStreamWaitEvent) makes
# one stream wait for another on the GPU and never blocks the host.
CUDA_SYNC_CATEGORY = "cuda_sync"
GPU_SIDE_WAITS = frozenset({"Stream Wait Event"})

_MARKER = re.compile(r"^torchsync::(?P<family>optimizer|batches|loop)=(?P<count>\d+)$")


@dataclass(frozen=True)
class TraceEvent:
    name: str
    category: str
    ts: float  # microseconds
    dur: float
    bytes: int = 0


@dataclass
class TraceSummary:
    basis: str | None
    total_steps: int
    window: tuple[int, int]
    per_step: dict[str, float] = field(default_factory=dict)  # event name -> count per steady step
    blocked_us_per_step: float | None = None  # host time inside BLOCKING_RUNTIME_CALLS
    counts: dict[str, int] = field(default_factory=dict)  # whole run

    def to_json(self) -> dict:
        return {
            "basis": self.basis,
            "total_steps": self.total_steps,
            "window": list(self.window),
            "per_step": self.per_step,
            "blocked_us_per_step": self.blocked_us_per_step,
            "counts": self.counts,
        }


def load_events(trace: dict | str) -> list[TraceEvent]:
    """Complete ('X') events of a Chrome trace, given as a dict or a file path."""
    if isinstance(trace, str):
        with open(trace, encoding="utf-8", errors="replace") as handle:
            trace = json.load(handle)
    raw = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    events = []
    for item in raw:
        if item.get("ph") != "X" or "ts" not in item:
            continue
        args = item.get("args") or {}
        events.append(
            TraceEvent(
                name=str(item.get("name", "")),
                category=str(item.get("cat", "")),
                ts=float(item["ts"]),
                dur=float(item.get("dur", 0.0)),
                bytes=int(args.get("bytes", 0) or 0),
            )
        )
    return events


def is_sync_event(event: TraceEvent) -> bool:
    """Whether the event is evidence that the host waited for the GPU (or staged a copy)."""
    if event.category == CUDA_SYNC_CATEGORY:
        return event.name not in GPU_SIDE_WAITS
    return event.name in BLOCKING_RUNTIME_CALLS or event.name in SYNC_MEMCPY_NAMES or event.name in UNLABELLED_MEMCPY_NAMES


def step_markers(events: list[TraceEvent]) -> tuple[str | None, list[tuple[float, int]]]:
    """(basis, sorted [(ts, count)]) from the harness annotations; optimizer clock preferred.

    A record_function shows up twice (CPU and GPU annotation); the CPU one is used.
    """
    by_family: dict[str, list[tuple[float, int]]] = {steady_state.OPTIMIZER: [], steady_state.BATCHES: [], "loop": []}
    for event in events:
        match = _MARKER.match(event.name)
        if match and not event.category.startswith("gpu_"):
            by_family[match.group("family")].append((event.ts, int(match.group("count"))))
    for family in (steady_state.OPTIMIZER, steady_state.BATCHES):
        if by_family[family]:
            return family, sorted(by_family[family])
    return None, []


def loop_start_times(events: list[TraceEvent]) -> list[float]:
    return [e.ts for e in events if e.name.startswith("torchsync::loop=") and not e.category.startswith("gpu_")]


def step_of(ts: float, basis: str | None, markers: list[tuple[float, int]]) -> int | None:
    """Step index of an event at ``ts`` (same convention as the emulate backend)."""
    if basis is None:
        return None
    position = bisect_right([m[0] for m in markers], ts)
    count = markers[position - 1][1] if position else 0
    return steady_state.step_index(basis, count, count)


def summarize(trace: dict | str, warmup: int = steady_state.DEFAULT_WARMUP) -> TraceSummary:
    events = load_events(trace)
    basis, markers = step_markers(events)
    total = markers[-1][1] if markers else 0
    loop_steps = [step_of(ts, basis, markers) for ts in loop_start_times(events)]
    window = SteadyWindow(basis, total, warmup, [s for s in loop_steps if s is not None])
    counts: dict[str, int] = {}
    steady: dict[str, int] = {}
    blocked_us = 0.0
    for event in events:
        if not is_sync_event(event):
            continue
        counts[event.name] = counts.get(event.name, 0) + 1
        if window.contains(step_of(event.ts, basis, markers)):
            steady[event.name] = steady.get(event.name, 0) + 1
            if event.name in BLOCKING_RUNTIME_CALLS:
                blocked_us += event.dur
    per_step = {name: window.per_step(n) for name, n in sorted(steady.items())}
    blocked = None if window.per_step(1) is None else round(blocked_us / max(window.length, 1), 3)
    return TraceSummary(
        basis, total, (window.start, window.stop), {k: v for k, v in per_step.items() if v is not None}, blocked, counts
    )
