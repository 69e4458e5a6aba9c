"""Start a harness run in its own contained process tree and watch it (the verifier's side).

A run is ``supervisor -> harness`` (supervisor.py) in a new session, stdin ``/dev/null``,
stdout and stderr on pipes. Two ways to start one:

* ``FreshLauncher``: ``python -I -S supervisor.py`` starts ``python -c <boot> ...``: an
  interpreter per run (the cuda backend: every timed run starts from scratch);
* ``ForkServer`` (Linux, emulate backend): forkserver.py imports torch once and forks.

``watch`` reads both pipes with a cap (the last ``OUTPUT_CAP`` bytes of each are kept, the
rest counted and dropped), enforces the deadline through the control pipe (the supervisor
stops the harness, then kills it), and returns when the supervisor is done; it never waits
without a bound, also when a daemon of the script keeps the pipes open. A supervisor that
died without its status (the script killed it) leaves the cleanup to the verifier
(containment.sweep), and the run's report names what it killed.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from torchsync_lint.verify import containment, supervisor

OUTPUT_CAP = 1 << 20  # bytes of each stream kept (the tail)
DRAIN_S = 1.0  # after the supervisor is done: how long to wait for the pipes to close
POLL_S = 0.1


def package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def boot_code(module: str, call: str = "main()") -> str:
    """``python -c`` code that imports ``module`` from this checkout and calls it.

    ``python -m module`` would put the working directory first on ``sys.path``, where a
    ``json.py`` beside the user's script shadows the harness's own imports. ``-c`` puts it
    there too, so it is replaced by the package root just long enough to import the
    package, then removed: the script then sees the ``sys.path`` of ``python script.py``
    (its directory first, inserted by the harness), and PYTHONPATH as the user set it.
    """
    return f"import sys; sys.path[0] = {package_root()!r}; import {module} as m; del sys.path[0]; sys.exit(m.{call})"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


@dataclass
class Started:
    """One run in flight: the supervisor's pid and the verifier's ends of its pipes."""

    pid: int
    stdout: int
    stderr: int
    control: int  # write end: b"stop" asks the supervisor to stop the run
    lifeline: int  # read end: end of file when the supervisor is done
    popen: subprocess.Popen | None = None


class _Pipes:
    """The four pipes of a run; ``child`` are the ends the supervisor keeps."""

    def __init__(self) -> None:
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self.ctl_r, self.ctl_w = os.pipe()
        self.life_r, self.life_w = os.pipe()

    @property
    def child(self) -> list[int]:
        return [self.out_w, self.err_w, self.ctl_r, self.life_w]

    def close_child_ends(self) -> None:
        for fd in self.child:
            os.close(fd)

    def close_all(self) -> None:
        for fd in (self.out_r, self.ctl_w, self.life_r, *self.child):
            try:
                os.close(fd)
            except OSError:
                pass

    def started(self, pid: int, popen: subprocess.Popen | None = None) -> Started:
        return Started(pid, self.out_r, self.err_r, self.ctl_w, self.life_r, popen)


class FreshLauncher:
    """A new interpreter for the supervisor and one for the harness, per run."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = child_env(env)

    def start(self, module: str, argv: list[str], cwd: str, status_path: str) -> Started:
        pipes = _Pipes()
        command = [
            sys.executable, "-I", "-S", supervisor.__file__, str(pipes.ctl_r), str(pipes.life_w), status_path, "--",
            sys.executable, "-c", boot_code(module), *argv,
        ]
        try:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=pipes.out_w,
                stderr=pipes.err_w,
                pass_fds=(pipes.ctl_r, pipes.life_w),
                cwd=cwd,
                env=self.env,
                start_new_session=True,
            )
        except BaseException:
            pipes.close_all()
            raise
        containment.own(popen.pid)
        pipes.close_child_ends()
        return pipes.started(popen.pid, popen)

    def close(self) -> None:
        pass


class ForkServer:
    """One preloaded server process per verify run; ``start`` asks it for a run."""

    def __init__(self, preload: list[str], env: dict[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._fallback = FreshLauncher(env)  # should the server die, runs go on the slow way
        self.failure: str | None = None
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()
        try:
            self._server = subprocess.Popen(
                [sys.executable, "-c", boot_code("torchsync_lint.verify.forkserver", "main(sys.argv[1:])"), str(theirs.fileno()), *preload],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                pass_fds=(theirs.fileno(),),
                env=child_env(env),
                start_new_session=True,
            )
        finally:
            theirs.close()
        containment.own(self._server.pid)

    @staticmethod
    def available() -> bool:
        return sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "fork")

    def start(self, module: str, argv: list[str], cwd: str, status_path: str) -> Started:
        if self.failure is None:
            try:
                return self._start(module, argv, cwd, status_path)
            except OSError as exc:
                self.failure = str(exc)
        return self._fallback.start(module, argv, cwd, status_path)

    def _start(self, module: str, argv: list[str], cwd: str, status_path: str) -> Started:
        pipes = _Pipes()
        request = json.dumps({"module": module, "argv": argv, "cwd": cwd, "status": status_path}).encode()
        try:
            with self._lock:
                socket.send_fds(self._sock, [request], pipes.child)
                reply = self._sock.recv(4096)
        except BaseException:
            pipes.close_all()
            raise
        pipes.close_child_ends()
        if not reply:
            pipes.close_all()
            raise OSError(f"the verifier's fork server exited: {self.log_tail()}")
        pid = int(json.loads(reply)["pid"])
        containment.own(pid)  # the server's child; the verifier's, should the server die
        return pipes.started(pid)

    def log_tail(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-2000:].strip() or f"exit status {self._server.poll()}"

    def close(self) -> None:
        self._sock.close()  # end of file: the server returns from serve() and exits
        try:
            self._server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()
        containment.disown(self._server.pid)
        self._log.close()


class Tail:
    """The last ``cap`` bytes written to a stream, and how many bytes came in all."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.cap:  # trim in batches: amortised O(1) per byte
            del self.data[: len(self.data) - self.cap]

    @property
    def dropped(self) -> int:
        return max(0, self.total - self.cap)

    def text(self) -> str:
        return bytes(self.data[-self.cap :]).decode("utf-8", "replace")


@dataclass
class Watched:
    """How a run ended, from the verifier's side."""

    stdout: Tail = field(default_factory=Tail)
    stderr: Tail = field(default_factory=Tail)
    timed_out: bool = False
    cancelled: bool = False
    status: dict | None = None  # the supervisor's status file
    duration_s: float = 0.0
    supervisor_lost: bool = False  # it died without writing its status (the script killed it)
    killed: list[str] = field(default_factory=list)  # what the verifier then killed (containment.sweep)


def watch(
    started: Started,
    timeout: float,
    status_path: str,
    cancel: threading.Event | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> Watched:
    result = Watched()
    begin = time.monotonic()
    deadline = begin + timeout
    lifeline = Tail(256)  # "harness PID" from the supervisor
    streams = {started.stdout: result.stdout, started.stderr: result.stderr, started.lifeline: lifeline}
    open_fds = [started.stdout, started.stderr, started.lifeline]
    stop_sent: float | None = None

    def stop_due(now: float) -> bool:
        if now >= deadline or (cancel is not None and cancel.is_set()):
            result.timed_out = now >= deadline
            result.cancelled = not result.timed_out
            return True
        return False

    try:
        while started.lifeline in open_fds:
            now = time.monotonic()
            if stop_sent is None and stop_due(now):
                _send_stop(started.control, "deadline" if result.timed_out else "cancelled")
                stop_sent = now
            if stop_sent is not None and now > stop_sent + supervisor.GRACE_S + 10:
                break  # the supervisor itself is stuck: the backstop below kills its session
            _pump(open_fds, streams, POLL_S)
            if on_tick is not None:
                on_tick(now - begin)
        result.status = _read_json(status_path)
        if result.status is None and stop_sent is None:
            # The supervisor died without its status (the script killed it) and the run goes
            # on: watch the script ourselves until it ends, or the deadline, or a cancel.
            harness = re.match(r"harness (\d+)", lifeline.text())
            while containment.running(started.pid, int(harness.group(1)) if harness else None) and not stop_due(time.monotonic()):
                _pump(open_fds, streams, POLL_S)
                if on_tick is not None:
                    on_tick(time.monotonic() - begin)
        # The supervisor is done (it killed every process it could find); what still holds
        # the pipes escaped it. Give them a moment, then kill the session and stop reading.
        # A supervisor gone without its status was killed: what it would have killed is ours.
        _drain(open_fds, streams, DRAIN_S)
        if result.status is None:
            result.supervisor_lost = True
            result.killed = containment.sweep(started.pid)
        elif open_fds:
            kill_session(started.pid)
        if open_fds:
            _drain(open_fds, streams, DRAIN_S)
    finally:
        for fd in (started.stdout, started.stderr, started.lifeline, started.control):
            try:
                os.close(fd)
            except OSError:
                pass
        if started.popen is not None:
            try:
                started.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill_session(started.pid)
                started.popen.wait()
        containment.disown(started.pid)
    result.duration_s = time.monotonic() - begin
    return result


def _send_stop(control: int, reason: str) -> None:
    try:
        os.write(control, supervisor.STOP_REQUEST + b":" + reason.encode())
    except OSError:
        pass  # the supervisor is already gone


def _pump(open_fds: list[int], streams: dict[int, Tail], wait: float) -> None:
    try:
        readable, _, _ = select.select(open_fds, [], [], wait)
    except InterruptedError:  # pragma: no cover - PEP 475 retries
        return
    for fd in readable:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            open_fds.remove(fd)
        elif fd in streams:
            streams[fd].add(chunk)


def _drain(open_fds: list[int], streams: dict[int, Tail], seconds: float) -> None:
    end = time.monotonic() + seconds
    while open_fds and time.monotonic() < end:
        _pump(open_fds, streams, min(POLL_S, max(0.0, end - time.monotonic())))


def kill_session(sid: int) -> None:
    """SIGKILL every process in session ``sid`` (the supervisor's): the backstop for a
    supervisor that could not finish. Linux reads /proc; elsewhere the supervisor's group."""
    try:
        os.killpg(sid, signal.SIGKILL)
    except OSError:
        pass
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            if os.getsid(pid) == sid:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def _read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
