"""Run a harness in a subprocess with a timeout; a crash, hang or early exit is a result,
never an exception, so one bad script does not stop the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from torchsync_lint.verify.evidence import RuntimeEvent
from torchsync_lint.verify.steady_state import SteadyWindow

OK = "ok"
CRASHED = "crashed"
TIMEOUT = "timeout"
EARLY_EXIT = "early-exit"

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

    def window(self, warmup: int) -> SteadyWindow:
        """This run's steady-state steps (steady_state.py)."""
        return SteadyWindow(self.step_basis, self.total_steps, warmup, self.excluded_steps)


def sys_path_args(paths: list[str] | None) -> list[str]:
    """Harness arguments that put ``paths`` on the script's sys.path (a fixer-written copy
    of a script imports its siblings from the original's directory)."""
    return [arg for path in paths or [] for arg in ("--sys-path", path)]


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = _package_root()
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


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
) -> RunRecord:
    """``python -m module --out F [harness_args] script script_args`` with a wall-clock limit.

    ``require_result``: the script is a fixture, so exiting 0 without its ``RESULT`` line
    means it stopped early (an early ``sys.exit(0)``, a swallowed error).
    """
    with tempfile.TemporaryDirectory(prefix="torchsync-verify-") as tmp:
        out_path = os.path.join(tmp, "record.json")
        command = [sys.executable, "-m", module, "--out", out_path, *(harness_args or []), script, *script_args]
        started = time.monotonic()
        # Own session: on timeout we kill the whole group (DataLoader workers included).
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(), start_new_session=True
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            stdout, stderr = proc.communicate()
            return RunRecord(
                TIMEOUT, returncode=None, duration_s=time.monotonic() - started, detail=f"no exit after {timeout:g}s (killed)"
            )
        duration = time.monotonic() - started
        record = _read_record(out_path)
    return _classify(record, proc.returncode, stdout, stderr, duration, require_result)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_record(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None


def _classify(
    record: dict | None, returncode: int, stdout: str, stderr: str, duration: float, require_result: bool = True
) -> RunRecord:
    result = parse_result_line(stdout)
    if record is None:
        # The harness itself died (signal, OOM kill, import error) before writing its record.
        return RunRecord(CRASHED, returncode=returncode, duration_s=duration, detail=_tail(stderr) or f"exit status {returncode}")
    run = RunRecord(
        OK,
        events=[RuntimeEvent.from_json(e) for e in record.get("events", [])],
        step_basis=record.get("step_basis"),
        total_steps=int(record.get("total_steps") or 0),
        excluded_steps=[int(s) for s in record.get("excluded_steps") or []],
        returncode=returncode,
        duration_s=duration,
        result=result,
        extra={k: v for k, v in record.items() if k not in ("events", "step_basis", "total_steps", "excluded_steps", "error", "exit_code")},
    )
    if record.get("error") or returncode != 0:
        run.status = CRASHED
        run.detail = _tail(record.get("error") or stderr) or f"exit status {returncode}"
    elif result is None and require_result:
        run.status = EARLY_EXIT
        run.detail = "exited 0 without printing the `RESULT {json}` line the fixture contract requires"
    return run


def _tail(text: str | None) -> str:
    text = (text or "").strip()
    return text[-_TAIL:]
