"""Pieces shared by the child-process harnesses (emulate and cuda). Imports torch.

Everything here is installed for one script run inside a fresh subprocess and undone
on exit, so nothing leaks between runs even when harnesses are used in-process (tests).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
import torch.utils.data

from torchsync_lint.verify import steady_state


class Patcher:
    """setattr with guaranteed restore, in reverse order. An attribute that was inherited
    (not in the object's own ``__dict__``) is deleted again rather than shadowed."""

    _MISSING = object()

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, obj: Any, name: str, value: Any) -> None:
        own = vars(obj).get(name, self._MISSING) if hasattr(obj, "__dict__") else getattr(obj, name)
        self._saved.append((obj, name, own))
        setattr(obj, name, value)

    def restore(self) -> None:
        while self._saved:
            obj, name, value = self._saved.pop()
            if value is self._MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


class StopRun(BaseException):
    """Raised into the script to end it early, keeping everything recorded so far: by the
    step clock after ``--stop-after`` steps, or by GRACEFUL_STOP at the verifier's deadline.
    A BaseException, so ``except Exception`` in the script does not swallow it; its
    ``finally`` blocks and context managers still run (a SummaryWriter is closed)."""

    def __init__(self, reason: str, note: str = "") -> None:
        super().__init__(note or reason)
        self.reason = reason
        self.note = note


@dataclass
class RunSettings:
    """What ``harness_main`` was told about the one script this process runs. Module-level
    so that every backend's StepClock and run_script pick it up without more plumbing;
    tests that run a harness in-process get the defaults (no stop, no progress file)."""

    stop_after: int | None = None
    progress_path: str | None = None
    fallback_path: list[str] | None = None
    stopped: StopRun | None = None  # the stop that was raised, once it was


SETTINGS = RunSettings()


class StepClock:
    """Counts optimizer steps and DataLoader batches (see steady_state.py for the convention).

    ``listeners`` are called as ``listener(family, count)`` after every tick; the cuda
    harness uses them to drop profiler markers and CUDA timing events at step boundaries.

    With ``SETTINGS.stop_after = T`` it stops the script (StopRun) at the T-th optimizer
    step, or, in a script that has not stepped an optimizer, when it fetches batch T: the
    steps before are complete, the stop step holds only the script's teardown
    (steady_state.total_steps).
    """

    def __init__(self) -> None:
        self.optimizer_steps = 0
        self.batches = 0
        self.stop_after = SETTINGS.stop_after
        self._progress_fd = _open_progress(SETTINGS.progress_path)
        # Optimizers that stepped since the last tick: a GAN or a two-optimizer model steps
        # several per iteration, and counting each would halve every per-step rate.
        self._stepped_since_tick: list[Any] = []
        self.loop_starts: list[tuple[int, int]] = []  # clock snapshot at each DataLoader.__iter__
        self.listeners: list[Callable[[str, int], None]] = []
        self._handle = None

    def install(self) -> None:
        # A global post-hook sees every optimizer, including subclasses that override step().
        self._handle = register_optimizer_step_post_hook(self._on_optimizer_step)

    def uninstall(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """A step is one round of optimizer steps: it ticks on the first step ever and when an
        optimizer steps a second time since the last tick (with A and B stepping each
        iteration, at every A). Gradient accumulation and an optimizer replaced mid-run still
        tick once per step of whichever optimizer is stepping."""
        if self.optimizer_steps and not any(seen is optimizer for seen in self._stepped_since_tick):
            self._stepped_since_tick.append(optimizer)
            return
        self._stepped_since_tick = [optimizer]
        self.optimizer_steps += 1
        for listener in self.listeners:
            listener(steady_state.OPTIMIZER, self.optimizer_steps)
        self._report(self.optimizer_steps)
        if self.stop_after and self.optimizer_steps >= self.stop_after:
            _raise_stop(StopRun(STOPPED_BY_STEPS, f"stopped by the step clock after {self.optimizer_steps} optimizer steps"))

    def on_batch(self) -> None:
        self.batches += 1
        for listener in self.listeners:
            listener(steady_state.BATCHES, self.batches)
        if not self.optimizer_steps:
            self._report(self.batches)
            if self.stop_after and self.batches > self.stop_after:
                _raise_stop(StopRun(STOPPED_BY_STEPS, f"stopped by the step clock after {self.batches - 1} batches (no optimizer step)"))

    def _report(self, steps: int) -> None:
        if self._progress_fd is not None:
            with contextlib.suppress(OSError):
                os.pwrite(self._progress_fd, b"%-20d\n" % steps, 0)

    def on_loop_start(self) -> None:
        self.loop_starts.append(self.snapshot())
        for listener in self.listeners:
            listener("loop", len(self.loop_starts))

    def snapshot(self) -> tuple[int, int]:
        return (self.optimizer_steps, self.batches)


@dataclass
class LoaderSettings:
    """What the user asked the DataLoader for, kept even when the harness overrides it."""

    line: int
    num_workers: int
    pin_memory: bool


class _CountingIterator:
    def __init__(self, inner: Iterator, on_next: Callable[[Any], Any]) -> None:
        self._inner = inner
        self._on_next = on_next

    def __iter__(self) -> "_CountingIterator":
        return self

    def __next__(self) -> Any:
        return self._on_next(next(self._inner))

    def __len__(self) -> int:
        return len(self._inner)


def instrument_dataloader(
    patcher: Patcher,
    clock: StepClock,
    user_line: Callable[[], int],
    *,
    force_main_process: bool,
    can_pin: bool = False,
    on_iter: Callable[[torch.utils.data.DataLoader, LoaderSettings], None] | None = None,
    on_batch: Callable[[LoaderSettings, Any], Any] | None = None,
) -> None:
    """Patch DataLoader.__init__/__iter__ to remember the user's settings, count batches
    and (``force_main_process``: emulation and the cuda attribution pass) load in the main
    process so every transform runs under the modes. ``can_pin``: keep ``pin_memory`` when
    loading in the main process (a GPU machine pins there; the CPU wheel cannot).
    """
    loader_cls = torch.utils.data.DataLoader
    original_init = loader_cls.__init__
    original_iter = loader_cls.__iter__
    signature = inspect.signature(original_init)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        settings = LoaderSettings(
            line=user_line(), num_workers=int(arguments.get("num_workers") or 0), pin_memory=bool(arguments.get("pin_memory"))
        )
        if force_main_process:
            # Workers would run the dataset outside our modes; the CPU wheel cannot pin.
            # These are the arguments DataLoader rejects unless num_workers > 0.
            arguments["num_workers"] = 0
            arguments["pin_memory"] = arguments.get("pin_memory") if can_pin else False
            for name, neutral in (("prefetch_factor", None), ("persistent_workers", False), ("multiprocessing_context", None), ("timeout", 0)):
                if name in arguments:
                    arguments[name] = neutral
        original_init(*bound.args, **bound.kwargs)
        object.__setattr__(self, "_torchsync_settings", settings)

    def iterate(self: Any) -> Iterator:
        settings = getattr(self, "_torchsync_settings", None) or LoaderSettings(user_line(), self.num_workers, self.pin_memory)
        clock.on_loop_start()
        if on_iter is not None:
            on_iter(self, settings)

        def next_batch(batch: Any) -> Any:
            clock.on_batch()
            return on_batch(settings, batch) if on_batch else batch

        return _CountingIterator(original_iter(self), next_batch)

    patcher.set(loader_cls, "__init__", init)
    patcher.set(loader_cls, "__iter__", iterate)


STOPPED_BY_STEPS = "steps"
STOPPED_AT_DEADLINE = "deadline"
# supervisor.GRACEFUL_STOP (not imported: that module is also a stand-alone script).
GRACEFUL_STOP = getattr(signal, "SIGUSR2", None)


def _main_thread() -> bool:
    return GRACEFUL_STOP is not None and threading.current_thread() is threading.main_thread()


def _open_progress(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        return None


def _raise_stop(stop: StopRun) -> None:
    SETTINGS.stopped = SETTINGS.stopped or stop
    raise stop


def _stop_at_deadline(signum: int, frame: Any) -> None:
    """GRACEFUL_STOP from the supervisor: the deadline passed; end the script, keep the record."""
    signal.signal(signum, signal.SIG_IGN)  # once: the supervisor kills what does not stop
    _raise_stop(StopRun(STOPPED_AT_DEADLINE, "stopped at the verifier's deadline"))


@dataclass
class ScriptOutcome:
    exit_code: int = 0
    error: str | None = None
    stopped: StopRun | None = None


def run_script(path: str, script_args: list[str], extra_sys_path: list[str] | None = None) -> ScriptOutcome:
    """Run ``path`` as ``__main__`` with ``sys.argv``/``sys.path`` as ``python path args`` would:
    the script's directory first, then ``extra_sys_path`` (like PYTHONPATH entries), and
    ``SETTINGS.fallback_path`` after everything else (the project root, so that a ``src/``
    package imports without shadowing an installed module)."""
    path = os.path.abspath(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *script_args]
    sys.path[:0] = [os.path.dirname(path), *(extra_sys_path or [])]
    sys.path += [p for p in SETTINGS.fallback_path or [] if p not in sys.path]
    SETTINGS.stopped = None
    outcome = ScriptOutcome()
    previous = signal.signal(GRACEFUL_STOP, _stop_at_deadline) if _main_thread() else None
    try:
        runpy.run_path(path, run_name="__main__")
    except StopRun:
        pass  # outcome.stopped is set below, also when the script turned the stop into another exit
    except SystemExit as exc:
        code = exc.code
        outcome.exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        if code not in (None, 0) and not isinstance(code, int):
            outcome.error = f"SystemExit: {code}"
    except BaseException as exc:  # noqa: BLE001 - the script's crash is the report, not ours
        outcome.exit_code = 1
        outcome.error = format_user_traceback(exc, path)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if previous is not None:
            signal.signal(GRACEFUL_STOP, previous)
    if SETTINGS.stopped is not None:
        # We ended it: a clean stop even when the script's own handler exited non-zero.
        outcome.stopped = SETTINGS.stopped
        outcome.exit_code = 0
    return outcome


def format_user_traceback(exc: BaseException, user_file: str) -> str:
    """The traceback from the script's first frame on (the harness and runpy frames are noise)."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != user_file:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def run_record(backend: str, clock: StepClock, state: Any, outcome: ScriptOutcome) -> dict:
    """The JSON record a harness writes (schema: ``RunRecord`` in runner.py): the events of
    ``state`` (None: a pass that records none) placed on the step clock, and the outcome."""
    basis = steady_state.choose_basis(clock.optimizer_steps, clock.batches)
    events = [] if state is None else [
        {"line": e.line, "kind": e.kind, "op": e.op, "step": steady_state.step_index(basis, *e.clock)} for e in state.events
    ]
    stopped = outcome.stopped.reason if outcome.stopped else None
    return {
        "backend": backend,
        "events": events,
        "step_basis": basis,
        "total_steps": steady_state.total_steps(basis, clock.optimizer_steps, clock.batches, stopped == STOPPED_BY_STEPS),
        "excluded_steps": steady_state.loop_start_steps(basis, clock.loop_starts),
        "exit_code": outcome.exit_code,
        "error": outcome.error,
        "stopped": stopped,
        "stop_note": outcome.stopped.note if outcome.stopped else None,
    }


def write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


@contextlib.contextmanager
def flushed_std() -> Iterator[None]:
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()


def harness_main(
    prog: str,
    argv: list[str] | None,
    run: Callable[[argparse.Namespace], dict],
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """The child-process entry point both backends share: parse ``--out F [--sys-path P]...
    SCRIPT [ARGS...]`` (plus the backend's own options), run the script once, write the
    record as JSON and exit with the script's exit code."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--fallback-path", action="append", default=[])
    parser.add_argument("--stop-after", type=int, default=None)
    parser.add_argument("--progress", default=None)
    if add_arguments is not None:
        add_arguments(parser)
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    SETTINGS.stop_after, SETTINGS.progress_path, SETTINGS.fallback_path = args.stop_after, args.progress, args.fallback_path
    if GRACEFUL_STOP is not None:
        signal.signal(GRACEFUL_STOP, signal.SIG_IGN)  # until run_script runs the script
    with flushed_std():
        record = run(args)
    if record.get("stopped"):
        record["threads_ended"] = _outlasting_threads(STOP_GRACE_S)
    write_json(args.out, record)
    if record["error"]:
        sys.stderr.write(record["error"])
    if record.get("stopped"):
        # We ended the script: the process ends now. Interpreter shutdown would join the
        # script's non-daemon threads, and a writer thread waiting for a sentinel the stopped
        # loop never sent would hold the run until the deadline (atexit handlers likewise).
        with flushed_std():
            pass
        os._exit(record["exit_code"])
    return record["exit_code"]


STOP_GRACE_S = 1.0  # how long a stopped script's non-daemon threads get to finish on their own


def _outlasting_threads(grace: float) -> list[str]:
    """Names of the script's non-daemon threads still running ``grace`` seconds after the stop."""
    deadline = time.monotonic() + grace
    left = []
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(thread.name)
    return left
