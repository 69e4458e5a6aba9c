"""What a run leaves behind when its supervisor is gone, and how the verifier kills it.

Each run's supervisor (supervisor.py) is a child subreaper: whatever the script starts, forks
or detaches with ``setsid()`` is re-parented to it, and it kills all of it when the script
ends. A script can kill the supervisor itself (``os.kill(os.getppid(), SIGKILL)``); then its
processes would be re-parented to init and outlive the run. So while ``verify`` runs, the
verifier is a child subreaper too (``adopting``): the processes of a run whose supervisor
died come to it instead. After such a run (``sweep``) it kills, with the supervisor's own
``kill_tree``:

* every process still in the run's session (the harness and its children), and
* every *adopted* process: a child of the verifier that the verifier did not start. Every
  run starts in a new session, and a process can never join an existing session, so none
  of a run's processes is ever in the verifier's session; the children the verifier starts
  itself are the supervisors and the fork server (``own``) and those in its own session
  (a lint worker pool).

Each one killed is named in the run's report. Where the runs' processes end up when two
supervisors die at once, the first sweep takes both runs' leftovers. Without /proc (not
Linux) the backstop is the supervisor's session alone (launch.kill_session).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

from torchsync_lint.verify import supervisor

_LOCK = threading.Lock()
_OWN: set[int] = set()  # children the verifier started on purpose (supervisors, the fork server)
_STATE = {"depth": 0, "was_subreaper": False}


def own(pid: int) -> None:
    with _LOCK:
        _OWN.add(pid)


def disown(pid: int) -> None:
    with _LOCK:
        _OWN.discard(pid)


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """The verifier is a child subreaper for the duration (Linux; a no-op elsewhere). On the
    way out, whatever it adopted and no sweep took is killed and named on stderr."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["was_subreaper"] = supervisor.is_subreaper()
            supervisor.become_subreaper(True)
        _STATE["depth"] += 1
    try:
        yield
    finally:
        left = supervisor.kill_tree(adopted, _reap_adopted)
        if left:
            print(f"torchsync-lint verify: killed {len(left)} process(es) the scripts left running: {', '.join(left)}", file=sys.stderr)
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and not _STATE["was_subreaper"]:
                supervisor.become_subreaper(False)


def adopted(zombies: bool = False) -> list[int]:
    """Children of the verifier it did not start: processes of runs whose supervisor died
    (live ones; with ``zombies``, the dead not yet reaped as well)."""
    me = os.getpid()
    try:
        mine = os.getsid(0)
    except OSError:
        return []
    with _LOCK:
        own = set(_OWN)
    found = []
    for pid in supervisor.children_of(me):
        stat = supervisor.proc_stat(pid)
        if pid in own or stat is None or stat[2] == mine:
            continue
        if zombies or supervisor.alive(stat):
            found.append(pid)
    return found


def sweep(session: int) -> list[str]:
    """Kill what a run left after its supervisor (the leader of ``session``) died: the
    session's processes, the verifier's adopted ones, and their descendants. Returns what
    was killed (``supervisor.describe``)."""
    if not os.path.isdir("/proc/self"):
        from torchsync_lint.verify.launch import kill_session

        kill_session(session)
        return []
    return supervisor.kill_tree(lambda: [*session_members(session), *adopted()], _reap_adopted)


def session_members(session: int) -> list[int]:
    """Live processes of ``session`` (Linux /proc; empty elsewhere)."""
    found = []
    for pid in supervisor.all_pids():
        stat = supervisor.proc_stat(pid)
        if supervisor.alive(stat) and stat[2] == session:
            found.append(pid)
    return found


def running(session: int, harness: int | None) -> bool:
    """Whether the run in ``session`` still runs its script: the ``harness`` process (when
    the supervisor said which it is), else any process of the session."""
    _reap_adopted()  # a harness that exited after its supervisor died is our zombie
    members = session_members(session)
    return harness in members if harness is not None else bool(members)


def _reap_adopted() -> None:
    """Collect the adopted processes that died (only those: a Popen's child is its own)."""
    for pid in adopted(zombies=True):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
