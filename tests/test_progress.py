"""The progress line: on a terminal's stderr only, rewritten in place, erased at the end."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.progress import ERASE, progress
from torchsync_lint.rules._cases import in_loop

ROOT = Path(__file__).resolve().parent.parent


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_or_a_file_gets_nothing():
    with progress(io.StringIO()) as tick:
        assert tick is None
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream, progress(stream) as tick:
        assert tick is None
    os.close(read)


def test_the_line_is_redrawn_in_place_throttled_and_erased(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    now = [0.0]
    stream = FakeTerminal()
    with progress(stream, interval=0.1, clock=lambda: now[0]) as tick:
        tick(0, 3)
        tick(1, 3)  # within the interval: skipped
        now[0] = 0.5
        tick(2, 3)
        tick(3, 3)  # the last file is always drawn
    assert stream.getvalue() == "\rtorchsync-lint: 0/3 files\rtorchsync-lint: 2/3 files\rtorchsync-lint: 3/3 files" + ERASE


def test_erased_on_an_error_and_silent_on_a_dumb_terminal(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    stream = FakeTerminal()
    with pytest.raises(KeyboardInterrupt), progress(stream) as tick:
        tick(0, 1)
        raise KeyboardInterrupt
    assert stream.getvalue().endswith(ERASE)
    monkeypatch.setenv("TERM", "dumb")
    with progress(FakeTerminal()) as tick:
        assert tick is None


def _project(tmp_path: Path, n: int) -> Path:
    for i in range(n):
        (tmp_path / f"m{i:02}.py").write_text(in_loop("total += loss.item()"), encoding="utf-8")
    return tmp_path


def _run_with_stderr_on_a_pty(args: list[str], cwd: Path) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "TORCHSYNC_JOBS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "torchsync_lint", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read()
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out, b"".join(chunks).decode()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_draws_on_a_terminal_and_leaves_the_report_alone(tmp_path, jobs):
    n = 16  # 16 files: `--jobs 2` uses worker processes
    code, out, err = _run_with_stderr_on_a_pty(["check", ".", "--no-cache", "--isolated", "--jobs", jobs, "-q"], _project(tmp_path, n))
    assert code == 1
    assert f"torchsync-lint: 0/{n} files" in err and f"torchsync-lint: {n}/{n} files" in err
    assert err.endswith(ERASE)  # nothing left on the terminal
    assert "torchsync-lint: " not in out and out.count("TSL101") == n  # the report (stdout) has no progress


def test_check_with_stderr_piped_prints_no_progress(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"}
    out = subprocess.run([sys.executable, "-m", "torchsync_lint", "check", ".", "--no-cache", "--isolated", "-q"], cwd=_project(tmp_path, 3), env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and out.stderr == ""
