"""A fork server for the emulate backend: import torch once, fork a fresh process per run.

Most of an emulated run of a small script is start-up: the interpreter, ``import torch``,
torchmetrics, and ``torch._dynamo`` (imported by the first TorchDispatchMode call). This
process imports them once; for each run it forks a supervisor (supervisor.py), which forks
the harness. Every script still runs in its own fresh process, from the same clean state
(nothing the scripts do reaches this process), with its own session, stdin, output pipes
and working directory, exactly as the fresh ``python -m harness`` start does.

Forking after ``import torch`` is what PyTorch's own DataLoader workers do; it is safe as
long as no CUDA context and no OpenMP pool exist yet, and this process never computes.
Linux only (the verifier starts fresh processes elsewhere, and for the cuda backend).

Protocol (a SOCK_SEQPACKET socket pair, one request at a time): the verifier sends
``{"module", "argv", "cwd", "status"}`` as JSON with four descriptors (stdout and stderr
write ends, control read end, lifeline write end) and reads back ``{"pid": supervisor}``.
End of file on the socket ends the server.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import random
import signal
import socket
import sys
import threading

from torchsync_lint.verify.supervisor import _CAUGHT, Supervisor, _write_json

MAX_MESSAGE = 1 << 20


class _Harness(BaseException):
    """Raised in the forked harness process to leave the server's stack: it unwinds to
    ``main`` and the interpreter exits the normal way (atexit handlers, flushes)."""

    def __init__(self, module: str, argv: list[str]) -> None:
        super().__init__(module)
        self.module = module
        self.argv = argv


def preload(modules: list[str]) -> list[str]:
    """Import what every run needs; a missing optional module (torchmetrics) is skipped."""
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - preloading only saves time; the run imports it again and reports
            continue
    return loaded


def serve(sock: socket.socket) -> None:
    """Answer requests until the verifier closes its end. Returns only in a harness process
    (by raising _Harness)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        except (ConnectionError, OSError):
            return
        if not message:
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            _supervisor_process(sock, request, fds)  # never returns except as _Harness
        for fd in fds:
            os.close(fd)
        sock.sendall(json.dumps({"pid": pid}).encode())


def _supervisor_process(sock: socket.socket, request: dict, fds: list[int]) -> None:
    stdout_w, stderr_w, control_r, lifeline_w = fds
    me = os.getpid()
    supervisor = Supervisor(control_r, lifeline_w, request["status"])
    try:
        sock.close()
        os.setsid()
        os.dup2(stdout_w, 1)
        os.dup2(stderr_w, 2)
        os.close(stdout_w)
        os.close(stderr_w)
        os.chdir(request["cwd"])
        supervisor.install_signal_handlers()

        def spawn() -> int:
            child = os.fork()
            if child == 0:
                os.setpgid(0, 0)
                os.close(control_r)
                os.close(lifeline_w)
                for sig in _CAUGHT:
                    signal.signal(sig, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start-up
                _reseed()
                raise _Harness(request["module"], request["argv"])
            return child

        supervisor.run(spawn)
    except _Harness:
        if os.getpid() != me:
            raise
    except BaseException as exc:  # noqa: BLE001 - always leave a status for the verifier
        supervisor.status["error"] = f"{type(exc).__name__}: {exc}"
        try:
            _write_json(request["status"], supervisor.status)
        finally:
            os._exit(70)
    os._exit(0)


def _reseed() -> None:
    """A fresh process draws new seeds; forked copies would share the server's."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
        except Exception:  # noqa: BLE001
            pass


def exit_like_python(code: int) -> None:
    """End a harness process as interpreter shutdown would, as far as a script can tell:
    non-daemon threads joined, atexit handlers run (multiprocessing, weakref.finalize and
    the script's own), standard streams flushed. Then ``os._exit``: tearing down the
    preloaded module graph would write to, and so copy, every page shared with the server
    (about a second of CPU per run, for nothing the script could observe)."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        try:
            shutdown()
        except Exception:  # noqa: BLE001 - as at a normal exit, a failing thread does not change the code
            pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def main(argv: list[str]) -> int:
    """``forkserver FD [MODULE...]``: preload MODULEs, then serve on socket FD."""
    sock = socket.socket(fileno=int(argv[0]))
    preload(argv[1:])
    # What is loaded now lives as long as the server: keep the collector from walking it in
    # every run (a walk writes to each object, copying the page the run shares with us).
    gc.freeze()
    try:
        serve(sock)
    except _Harness as harness:
        module = importlib.import_module(harness.module)
        code = module.main(harness.argv)
        exit_like_python(code if isinstance(code, int) else 1)
    os._exit(0)  # the verifier is done with us; nothing here needs an orderly teardown
