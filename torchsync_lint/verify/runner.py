"""Run a harness in a contained subprocess with a timeout; a crash, hang or early exit is
a result, never an exception, so one bad script does not stop the run."""

from __future__ import annotations

import json
import math
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from torchsync_lint.verify import launch
from torchsync_lint.verify.evidence import RuntimeEvent
from torchsync_lint.verify.steady_state import SteadyWindow

OK = "ok"
CRASHED = "crashed"
TIMEOUT = "timeout"
EARLY_EXIT = "early-exit"
INTERRUPTED = "interrupted"  # the verifier was stopped (Ctrl-C, SIGTERM) while the script ran

STOPPED_BY_STEPS = "steps"  # the harness's step clock stopped the script (harness_common.StopRun)

EXITED_EARLY = "exited early with status 0, before finishing its steps (an `os._exit(0)`? it ends the process before the verifier can record the run)"

RESULT_PREFIX = "RESULT "
_TAIL = 2000


@dataclass
class RunRecord:
    status: str
    events: list[RuntimeEvent] = field(default_factory=list)
    step_basis: str | None = None
    total_steps: int = 0
    excluded_steps: list[int] = field(default_factory=list)  # steps holding a loop start (steady_state.py)
    returncode: int | None = None
    duration_s: float = 0.0
    detail: str = ""  # why it failed: traceback tail, timeout, missing RESULT line
    result: dict | None = None  # the script's RESULT {json}
    extra: dict = field(default_factory=dict)  # backend-specific payload (cuda: timings, trace path)
    stopped: str | None = None  # STOPPED_BY_STEPS, or "deadline" when the harness was stopped at the timeout
    notes: list[str] = field(default_factory=list)  # what the containment saw (runner._notes), for the report
    cpu_s: float | None = None  # CPU time of the harness process (benchmarks/bench_verify.py)

    def window(self, warmup: int) -> SteadyWindow:
        """This run's steady-state steps (steady_state.py)."""
        return SteadyWindow(self.step_basis, self.total_steps, warmup, self.excluded_steps)


def sys_path_args(paths: list[str] | None) -> list[str]:
    """Harness arguments that put ``paths`` on the script's sys.path (a fixer-written copy
    of a script imports its siblings from the original's directory)."""
    return [arg for path in paths or [] for arg in ("--sys-path", path)]


@dataclass
class RunOptions:
    """How to run one script: where, with which import paths, and when to stop it."""

    cwd: str | None = None  # None: the verifier's working directory
    sys_path: list[str] = field(default_factory=list)  # after the script's directory (like PYTHONPATH)
    fallback_path: list[str] = field(default_factory=list)  # after site-packages: only what nothing else provides
    stop_after: int | None = None  # step-clock ticks after which the harness stops the script (steady_state.py)

    def harness_args(self) -> list[str]:
        args = sys_path_args(self.sys_path)
        args += [arg for path in self.fallback_path for arg in ("--fallback-path", path)]
        if self.stop_after:
            args += ["--stop-after", str(self.stop_after)]
        return args


Progress = Callable[[float, int], None]  # (elapsed seconds, steps so far)


def parse_result_line(stdout: str) -> dict | None:
    """The fixture contract: the last non-empty stdout line is ``RESULT {json}``."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith(RESULT_PREFIX):
        return None
    try:
        value = json.loads(lines[-1][len(RESULT_PREFIX) :])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else {"value": value}


def run_harness(
    module: str,
    script: str,
    script_args: list[str],
    timeout: float,
    harness_args: list[str] | None = None,
    require_result: bool = True,
    *,
    options: RunOptions | None = None,
    launcher: launch.FreshLauncher | launch.ForkServer | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> RunRecord:
    """``module --out F [harness_args] script script_args`` in a contained process tree
    (launch.py, supervisor.py) with a wall-clock limit; never raises for what the script does.

    ``require_result``: the script is a fixture, so exiting 0 without its ``RESULT`` line
    means it stopped early (an early ``sys.exit(0)``, a swallowed error).
    """
    if not (timeout > 0 and math.isfinite(timeout)):  # nan or inf would never fire
        raise ValueError(f"a run's timeout must be a positive number of seconds, not {timeout!r}")
    options = options or RunOptions()
    launcher = launcher or launch.FreshLauncher()
    with tempfile.TemporaryDirectory(prefix="torchsync-verify-") as tmp:
        out_path = os.path.join(tmp, "record.json")
        status_path = os.path.join(tmp, "supervisor.json")
        progress_path = os.path.join(tmp, "progress")
        argv = ["--out", out_path, *(harness_args or []), *options.harness_args()]
        if progress is not None:
            argv += ["--progress", progress_path]
        argv += [script, *script_args]
        try:
            started = launcher.start(module, argv, options.cwd or os.getcwd(), status_path)
        except OSError as exc:
            return RunRecord(CRASHED, detail=f"could not start the harness: {exc}")
        on_tick = None if progress is None else (lambda elapsed: progress(elapsed, _read_progress(progress_path)))
        watched = launch.watch(started, timeout, status_path, cancel, on_tick)
        record = _read_record(out_path)
    run = _classify(
        record,
        _returncode(watched.status),
        watched.stdout.text(),
        watched.stderr.text(),
        watched.duration_s,
        require_result,
        watched=watched,
        timeout=timeout,
    )
    run.cpu_s = (watched.status or {}).get("harness_cpu_s")
    return run


def _returncode(status: dict | None) -> int | None:
    harness = (status or {}).get("harness") or {}
    if harness.get("signal"):
        number = getattr(signal, harness["signal"], None)
        return -int(number) if number is not None else -1
    return harness.get("code")


def _read_progress(path: str) -> int:
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _read_record(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None


def _classify(
    record: dict | None,
    returncode: int | None,
    stdout: str,
    stderr: str,
    duration: float,
    require_result: bool = True,
    *,
    watched: launch.Watched | None = None,
    timeout: float | None = None,
) -> RunRecord:
    result = parse_result_line(stdout)
    notes = _notes(watched)
    if record is None:
        # The harness died (signal, OOM kill, import error) or was killed before writing its record.
        status = TIMEOUT if watched and watched.timed_out else INTERRUPTED if watched and watched.cancelled else CRASHED
        detail = _tail(stderr) or _exit_text(returncode)
        if status == CRASHED and returncode == 0:
            # Status 0 and no record: the process ended without unwinding (os._exit(0) in the
            # script), so the harness never wrote what it saw. Not a crash; not a finished run.
            status, detail = EARLY_EXIT, EXITED_EARLY
        if status == TIMEOUT:
            detail = f"no exit after {timeout:g}s (killed)"
        elif status == INTERRUPTED:
            detail = "the verifier was interrupted (killed)"
        return RunRecord(status, returncode=returncode, duration_s=duration, detail=_join(detail, notes), notes=notes)
    stopped = record.get("stopped")
    run = RunRecord(
        OK,
        events=[RuntimeEvent.from_json(e) for e in record.get("events", [])],
        step_basis=record.get("step_basis"),
        total_steps=int(record.get("total_steps") or 0),
        excluded_steps=[int(s) for s in record.get("excluded_steps") or []],
        returncode=returncode,
        duration_s=duration,
        result=result,
        extra={k: v for k, v in record.items() if k not in _RECORD_KEYS},
        stopped=stopped,
        notes=notes,
    )
    if watched is not None and watched.timed_out:
        # Stopped at the deadline: the harness wrote what it recorded until then.
        run.status = TIMEOUT
        run.detail = _join(f"no exit after {timeout:g}s (stopped; the evidence of its {run.total_steps} step(s) is kept)", notes)
    elif watched is not None and watched.cancelled:
        run.status = INTERRUPTED
        run.detail = _join("the verifier was interrupted", notes)
    elif stopped == STOPPED_BY_STEPS:
        run.notes.insert(0, record.get("stop_note") or "stopped by the step clock")
        if record.get("error"):
            run.notes.append("after the stop: " + _tail(record["error"]).splitlines()[-1])
        if record.get("threads_ended"):
            names = ", ".join(record["threads_ended"])
            run.notes.append(f"ended {len(record['threads_ended'])} non-daemon thread(s) still running after the stop ({names})")
    elif record.get("error") or returncode != 0:
        run.status = CRASHED
        run.detail = _join(_tail(record.get("error") or stderr) or _exit_text(returncode), notes)
    elif result is None and require_result:
        run.status = EARLY_EXIT
        run.detail = _join("exited 0 without printing the `RESULT {json}` line the fixture contract requires", notes)
    return run


_RECORD_KEYS = ("events", "step_basis", "total_steps", "excluded_steps", "error", "exit_code", "stopped", "stop_note", "threads_ended")


def _notes(watched: launch.Watched | None) -> list[str]:
    """What the containment saw: signals the script sent its parent, processes it left
    running, output beyond the cap."""
    if watched is None:
        return []
    notes = []
    status = watched.status or {}
    if status.get("parent_signals"):
        notes.append(f"the script sent {', '.join(status['parent_signals'])} to its parent process (ignored)")
    if status.get("leftovers"):
        notes.append(f"killed {len(status['leftovers'])} process(es) the script left running: {', '.join(status['leftovers'])}")
    if watched.supervisor_lost:
        killed = f"; the verifier killed {len(watched.killed)} process(es) the run left running: {', '.join(watched.killed)}" if watched.killed else ""
        notes.append(f"the script's parent process (the verifier's supervisor) was killed{killed}")
    if status.get("error"):
        notes.append(f"supervisor error: {status['error']}")
    for name, tail in (("stdout", watched.stdout), ("stderr", watched.stderr)):
        if tail.dropped:
            notes.append(f"{name}: {tail.total} bytes, the last {tail.cap} kept")
    return notes


def _exit_text(returncode: int | None) -> str:
    if returncode is None:
        return "ended without an exit status (killed with its supervisor)"
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            pass
    return f"exit status {returncode}"


def _join(detail: str, notes: list[str]) -> str:
    return "; ".join([detail, *notes]) if notes else detail


def _tail(text: str | None) -> str:
    text = (text or "").strip()
    return text[-_TAIL:]
