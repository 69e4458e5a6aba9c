"""A raw LSP client for the server tests that need to write bytes a well-behaved client never
would (wrong Content-Lengths, bodies that are not JSON, requests out of order): it spawns
`python -m torchsync_lint server` and reads its frames on a thread."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from pygls.uris import from_fs_path

ROOT = Path(__file__).resolve().parents[1]


def frame(obj=None, *, raw: bytes | None = None, length: int | None = None) -> bytes:
    body = raw if raw is not None else json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


class Wire:
    def __init__(self, cwd: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.stderr_path = Path(cwd).parent / f"server-{id(self)}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.p = subprocess.Popen([sys.executable, "-m", "torchsync_lint", "server", "--no-cache", *args],
                                      cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self.messages: list[dict] = []  # everything the server sent, in order
        self._arrived: queue.Queue = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.p.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    self._arrived.put(None)
                    return
                header += byte
            length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length"))
            message = json.loads(out.read(length))
            self.messages.append(message)
            self._arrived.put(message)

    # -- sending --------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def notify(self, method: str, params) -> None:
        self.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def send_request(self, method: str, params) -> int:
        self._next_id += 1
        self.write(frame({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}))
        return self._next_id

    def request(self, method: str, params, timeout: float = 30) -> dict | None:
        return self.answer(self.send_request(method, params), timeout)

    # -- receiving ------------------------------------------------------------------------------
    def wait(self, predicate, timeout: float = 30) -> dict | None:
        """The first message (sent so far or within ``timeout``) that ``predicate`` accepts."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for message in self.messages[seen:]:
                if predicate(message):
                    return message
            seen = len(self.messages)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                if self._arrived.get(timeout=left) is None and len(self.messages) == seen:
                    return None  # the server closed its output
            except queue.Empty:
                return None

    def answer(self, msg_id, timeout: float = 30) -> dict | None:
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def published(self, uri: str) -> list[dict]:
        return [m["params"] for m in list(self.messages) if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    # -- sessions -------------------------------------------------------------------------------
    def initialize(self, root: Path, **extra) -> dict | None:
        answer = self.request("initialize", {"processId": os.getpid(), "rootUri": from_fs_path(str(root)), "capabilities": {}, **extra})
        self.notify("initialized", {})
        return answer

    def alive(self, timeout: float = 30) -> bool:
        """Whether a request still gets its answer."""
        answer = self.request("textDocument/hover", {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}, timeout)
        return answer is not None and "error" not in answer

    def exit_status(self, timeout: float = 30) -> int | None:
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for stream in (self.p.stdin, self.p.stdout):
            try:
                stream.close()
            except OSError:
                pass
