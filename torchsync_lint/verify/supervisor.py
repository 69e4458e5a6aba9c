"""The process between the verifier and a harness: it contains one script run.

    verify ── supervisor (own session) ── harness (own process group) ── the script's children

Why a process in between:

* the script runs inside the harness, so ``os.getppid()`` in the script is the supervisor,
  never the verifier: ``os.kill(os.getppid(), SIGTERM)`` is recorded here and ignored, and
  ``os.killpg(0, ...)`` reaches only the harness's group;
* on Linux the supervisor is a *child subreaper*: descendants that double-fork or call
  ``setsid()`` to escape are re-parented to it, so after the harness exits it can find and
  kill every leftover process (``kill_tree``; no orphans outlive the run, and the status
  names each one killed). A script that kills the supervisor itself hands its processes to
  the next subreaper up, the verifier (containment.py), which kills them the same way;
* it watches a control pipe from the verifier: ``stop`` (the deadline, or the run was
  cancelled) asks the harness to stop with SIGUSR2 (the harness then writes the evidence
  it has), and after a grace period kills it; end of file (the verifier itself died)
  does the same, so nothing keeps running when the verifier is gone.

It holds the write end of a *lifeline* pipe until it exits: the verifier sees end of file
there when the run is over, without being the parent (the fork server starts supervisors).
The first thing it writes there is the harness's pid (``harness PID``), so that a verifier
whose supervisor was killed still knows which process is the script.

Standard library only: this file also runs as ``python -I -S supervisor.py ...`` (see
``main``), a start-up of a few milliseconds.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable

STOP_REQUEST = b"stop"
GRACEFUL_STOP = getattr(signal, "SIGUSR2", signal.SIGTERM)  # the harness turns it into a clean stop
GRACE_S = 5.0  # how long the harness may take to write its record after GRACEFUL_STOP
_LEFTOVER_ROUNDS_S = 5.0
# Signals that would end the supervisor: sent by the script or its children, never by the
# verifier (which uses the control pipe). Recorded, not obeyed.
_CAUGHT = tuple(
    sig for sig in (getattr(signal, name, None) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")) if sig
)
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def become_subreaper(on: bool = True) -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants are re-parented to this process
    (``on=False``: no longer). False where the platform has no such thing."""
    libc = _libc()
    return libc is not None and libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def is_subreaper() -> bool:
    libc = _libc()
    if libc is None:
        return False
    import ctypes

    flag = ctypes.c_int(0)
    return libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (OSError, AttributeError):
        return None


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc); empty where /proc cannot tell."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found += [int(token) for token in handle.read().split()]
        except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN: read every parent
            return [other for other in all_pids() if (proc_stat(other) or ("", 0, 0))[1] == pid]
        except OSError:
            continue
    return found


def all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, session id) of ``pid`` from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


def alive(stat: tuple[str, int, int] | None) -> bool:
    """A process (its ``proc_stat``) that is there and not a zombie or dead."""
    return stat is not None and stat[0] not in ("Z", "X")


def describe(pid: int) -> str:
    """``PID `command line``` (shortened), for a report of what was killed."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        command = ""
    if len(command) > 80:
        command = command[:77] + "..."
    return f"{pid} `{command}`" if command else str(pid)


def kill_tree(find_roots: Callable[[], list[int]], reap: Callable[[], object], seconds: float = 5.0) -> list[str]:
    """SIGKILL every live process ``find_roots()`` names, and all their descendants, round
    after round until none is left (or ``seconds`` pass). Each round first stops them all
    (SIGSTOP), then looks again, so a process forking meanwhile is caught with its child.
    ``reap()`` collects the dead among the caller's children. Returns ``describe()`` of each
    process killed."""
    killed: dict[int, str] = {}
    deadline = time.monotonic() + seconds
    while True:
        targets = _live_tree(find_roots())
        if targets:
            for pid in targets:
                _signal(pid, signal.SIGSTOP)
            targets = _live_tree([*targets, *find_roots()])
            for pid in targets:
                if pid not in killed:
                    killed[pid] = describe(pid)
                _signal(pid, signal.SIGKILL)
        reap()
        if not targets or time.monotonic() >= deadline:
            return list(killed.values())
        time.sleep(0.01)


def _live_tree(roots: list[int]) -> list[int]:
    """``roots`` and their descendants that are alive (not zombies), never this process."""
    me, seen, stack = os.getpid(), set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen or pid == me:
            continue
        seen.add(pid)
        stack += children_of(pid)
    return sorted(pid for pid in seen if alive(proc_stat(pid)))


class Supervisor:
    def __init__(self, control_fd: int, lifeline_fd: int, status_path: str) -> None:
        self.control_fd = control_fd
        self.lifeline_fd = lifeline_fd
        self.status_path = status_path
        self.signals: list[str] = []
        self.status: dict = {"harness": None, "stopped": None, "graceful": None, "leftovers": [], "parent_signals": self.signals}

    def _on_signal(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if name not in self.signals:
            self.signals.append(name)

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the fork server ignores it; we wait for ours
        for sig in _CAUGHT:
            signal.signal(sig, self._on_signal)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    def run(self, spawn: Callable[[], int]) -> int:
        """Start the harness with ``spawn()`` (returns its pid), contain it, write the status."""
        self.status["subreaper"] = become_subreaper()
        harness = spawn()
        self.status["harness_pid"] = harness
        try:
            os.write(self.lifeline_fd, f"harness {harness}\n".encode("ascii"))
        except OSError:
            pass  # the verifier is gone; _wait notices
        wait_status = self._wait(harness)
        self.status["harness"] = _describe(wait_status)
        self.status["harness_cpu_s"] = _CPU.get(harness)
        self.status["leftovers"] = self._kill_leftovers(harness)
        _write_json(self.status_path, self.status)
        os.close(self.lifeline_fd)  # the verifier reads end of file: the run is over
        return 0

    def _wait(self, harness: int) -> int | None:
        control_open = True
        exited = _pidfd(harness)  # readable when the harness exits (Linux); else poll
        watched = [self.control_fd] + ([exited] if exited is not None else [])
        try:
            while True:
                status = _reap(harness)
                if status is not None:
                    return status
                if not control_open:
                    return self._stop(harness, "verifier gone")
                readable, _, _ = select.select(watched, [], [], 0.5 if exited is not None else 0.05)
                if self.control_fd in readable:
                    data = _read(self.control_fd)
                    if not data:
                        control_open = False
                        watched.remove(self.control_fd)
                    elif STOP_REQUEST in data:
                        return self._stop(harness, data.decode("ascii", "replace").strip().split(":", 1)[-1] or "stop")
        finally:
            if exited is not None:
                os.close(exited)

    def _stop(self, harness: int, reason: str) -> int | None:
        """Ask the harness to stop and write its record; kill its group when it does not."""
        self.status["stopped"] = reason
        _signal(harness, GRACEFUL_STOP)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            status = _reap(harness)
            if status is not None:
                self.status["graceful"] = True
                return status
            time.sleep(0.05)
        self.status["graceful"] = False
        _killpg(harness)
        _signal(harness, signal.SIGKILL)
        return _wait_blocking(harness)

    def _kill_leftovers(self, harness: int) -> list[str]:
        """Kill what the script left behind: the harness's process group, then (Linux) every
        process re-parented to this subreaper, until none is left. Returns what was killed."""
        killed = kill_tree(lambda: children_of(os.getpid()), _reap_any, _LEFTOVER_ROUNDS_S)
        _killpg(harness)  # where /proc cannot tell (not Linux): the harness's group at least
        _reap_any()
        return killed


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _describe(wait_status: int | None) -> dict | None:
    if wait_status is None:
        return None
    if os.WIFSIGNALED(wait_status):
        return {"code": None, "signal": signal.Signals(os.WTERMSIG(wait_status)).name}
    return {"code": os.WEXITSTATUS(wait_status), "signal": None}


_CPU: dict[int, float] = {}  # pid -> CPU seconds (user + system), from wait4


def _reap(pid: int) -> int | None:
    try:
        done, status, usage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return 0
    if not done:
        return None
    _CPU[pid] = usage.ru_utime + usage.ru_stime
    return status


def _wait_blocking(pid: int) -> int | None:
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return None
    _CPU[pid] = usage.ru_utime + usage.ru_stime
    return status


def _reap_any() -> bool:
    """Reap finished children (ours and adopted orphans); False when there are none left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 256)
    except OSError as exc:
        if exc.errno == errno.EAGAIN:  # pragma: no cover
            return b" "
        return b""


def _write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """``supervisor.py CONTROL_FD LIFELINE_FD STATUS_PATH -- COMMAND...``: the harness as a
    fresh process (the cuda backend, and any run without the fork server)."""
    import subprocess

    control_fd, lifeline_fd, status_path = int(argv[0]), int(argv[1]), argv[2]
    command = argv[argv.index("--") + 1 :]
    for fd in (control_fd, lifeline_fd):
        os.set_inheritable(fd, False)  # the harness and the script's children must not hold them
    supervisor = Supervisor(control_fd, lifeline_fd, status_path)
    supervisor.install_signal_handlers()

    def spawn() -> int:
        # Own process group (the script's killpg(0) stays inside it); stdin is already
        # /dev/null; default signal dispositions, as a fresh `python script.py` has.
        group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, restore_signals=True, **group)
        process.returncode = 0  # reaped by Supervisor._wait (wait4), not by Popen
        return process.pid

    try:
        return supervisor.run(spawn)
    except BaseException as exc:  # noqa: BLE001 - always leave a status for the verifier
        supervisor.status["error"] = f"{type(exc).__name__}: {exc}"
        _write_json(status_path, supervisor.status)
        return 70


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
