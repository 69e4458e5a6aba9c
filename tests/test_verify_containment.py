"""`verify` contains the scripts it runs (issue 16, item 3): each runs in its own session
and process group with stdin closed, under a deadline that stops the whole tree, with its
output captured up to a cap; nothing it starts outlives the run; signalling its parent
does not take the verifier down; a module beside it does not shadow the harness; pragma
requirements are checked without imports; and the report is always written.

Each case runs ``torchsync-lint verify`` in a subprocess (a script that signals its parent
would otherwise signal pytest). The scripts are tiny; the harness still imports torch."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torchsync_lint.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LINUX = sys.platform.startswith("linux")
# The verifier either forks runs from a server that imported torch once (Linux, emulate:
# the default) or starts an interpreter per run; the containment must hold for both.
LAUNCHERS = [pytest.param("1", id="fork-server"), pytest.param("0", id="fresh")]


def _env(fork: str = "1", **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["TORCHSYNC_VERIFY_FORK"] = fork
    env.update(extra)
    return env


def _write(path: Path, source: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(textwrap.dedent(source).encode(encoding))
    return path


# The `torchsync-lint` console script, from any directory: unlike `python -m`, it does not
# put the working directory on sys.path.
CLI = [sys.executable, "-c", "import sys; del sys.path[0]; from torchsync_lint.cli import main; sys.exit(main(sys.argv[1:]))"]


def _verify(tmp_path: Path, *args: str, fork: str = "1", cwd: Path | None = None, limit: float = 120, stdin=subprocess.DEVNULL):
    """Run verify in a subprocess; returns (exit code, entries or None, seconds, stderr)."""
    report = tmp_path / "report.json"
    command = [*CLI, "verify", *args, "--backend", "emulate", "--format", "json", "--output-file", str(report)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd or tmp_path, env=_env(fork), stdin=stdin, capture_output=True, text=True, timeout=limit)
    elapsed = time.monotonic() - started
    entries = json.loads(report.read_text()) if report.exists() else None
    return done.returncode, entries, elapsed, done.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if LINUX:  # a zombie is dead for our purposes
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        except OSError:
            return False
    return True


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


DAEMON = """\
import pathlib, subprocess, sys
# A daemon in its own session that keeps the script's stdout open for two minutes.
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
pathlib.Path(__file__).with_suffix(".pid").write_text(str(child.pid))
print("left a daemon behind")
"""


@pytest.mark.parametrize("fork", LAUNCHERS)
def test_a_daemon_holding_stdout_neither_delays_the_run_nor_outlives_it(tmp_path, fork):
    script = _write(tmp_path / "daemon.py", DAEMON)
    code, entries, elapsed, stderr = _verify(tmp_path, str(script), "--timeout", "60", fork=fork, limit=110)
    pid = int(script.with_suffix(".pid").read_text())
    try:
        assert entries is not None, stderr
        assert elapsed < 60, f"verify waited {elapsed:.0f}s for the daemon"
        assert code == 0, entries
        (note,) = entries
        assert note["status"] == "note" and "killed 1 process(es) the script left running" in note["detail"]
        assert _wait_dead(pid)
    finally:
        _kill(pid)


ORPHAN = """\
import os, pathlib, sys, time
# Double fork + setsid, output to /dev/null: an orphan that would run for two minutes.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        pathlib.Path(__file__).with_suffix(".pid").write_text(str(os.getpid()))
        time.sleep(120)
    os._exit(0)
os.wait()
while not pathlib.Path(__file__).with_suffix(".pid").exists():
    time.sleep(0.01)
"""


@pytest.mark.skipif(not LINUX, reason="catching a setsid() orphan needs a Linux child subreaper")
@pytest.mark.parametrize("fork", LAUNCHERS)
def test_no_process_the_script_started_outlives_the_run(tmp_path, fork):
    script = _write(tmp_path / "orphan.py", ORPHAN)
    code, entries, _, stderr = _verify(tmp_path, str(script), fork=fork)
    pid = int(script.with_suffix(".pid").read_text())
    try:
        assert entries is not None, stderr
        assert code == 0, entries
        assert _wait_dead(pid), "the orphan outlived verify"
    finally:
        _kill(pid)


FLOOD = """\
import sys
chunk = b"x" * (1 << 20)
for _ in range(400):
    sys.stdout.buffer.write(chunk)
sys.stdout.buffer.write(b"\\nthe last line\\n")
"""

_MEASURE = """\
import sys
from torchsync_lint.cli import main
code = main(sys.argv[2:])
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
open(sys.argv[1], "w").write(peak.split()[1])
sys.exit(code)
"""


@pytest.mark.skipif(not LINUX, reason="reads the verifier's peak memory from /proc")
def test_a_flood_of_output_is_capped_not_held(tmp_path):
    """400 MB on stdout: the verifier keeps the tail and its own peak memory stays small."""
    script = _write(tmp_path / "flood.py", FLOOD)
    peak_file, report = tmp_path / "peak", tmp_path / "report.json"
    command = [sys.executable, "-c", _MEASURE, str(peak_file), "verify", str(script), "--backend", "emulate",
               "--format", "json", "--output-file", str(report)]
    subprocess.run(command, cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=240)
    peak_mb = int(peak_file.read_text()) / 1024
    assert peak_mb < 300, f"the verifier peaked at {peak_mb:.0f} MB for 400 MB of output"
    (note,) = json.loads(report.read_text())
    assert "stdout: 419430415 bytes, the last 1048576 kept" in note["detail"]


STDIN = """\
import sys
data = sys.stdin.read()  # with verify's stdin inherited, this waits for the terminal
print(f"read {len(data)} bytes")
"""


def test_the_script_reads_an_empty_stdin_not_the_verifiers(tmp_path):
    script = _write(tmp_path / "stdin.py", STDIN)
    with subprocess.Popen(["sleep", "100"], stdout=subprocess.PIPE) as never_closes:
        code, entries, _, stderr = _verify(tmp_path, str(script), "--timeout", "30", stdin=never_closes.stdout)
        never_closes.kill()
    assert entries == [] and code == 0, (entries, stderr)


PARENT_KILL = """\
import os, signal, time
os.kill(os.getppid(), signal.SIGTERM)
time.sleep(0.2)
os.kill(os.getppid(), signal.SIGINT)
time.sleep(0.2)
print("still here")
"""


@pytest.mark.parametrize("fork", LAUNCHERS)
def test_a_script_signalling_its_parent_does_not_take_verify_down(tmp_path, fork):
    script = _write(tmp_path / "parent_kill.py", PARENT_KILL)
    code, entries, _, stderr = _verify(tmp_path, str(script), fork=fork)
    assert entries is not None, f"no report (exit {code}): {stderr}"
    assert code == 0
    (note,) = entries
    assert note["detail"] == "the script sent SIGTERM, SIGINT to its parent process (ignored)"


@pytest.mark.parametrize("fork", LAUNCHERS)
def test_a_module_beside_the_script_does_not_shadow_the_harness(tmp_path, fork):
    """`python script.py` from the script's directory does not put `json.py` there in front
    of the standard library for its own start-up; the harness must not either."""
    _write(tmp_path / "json.py", "raise RuntimeError('the harness imported the json.py beside the script')\n")
    _write(tmp_path / "logging.py", "raise RuntimeError('the harness imported the logging.py beside the script')\n")
    _write(tmp_path / "script.py", "x = 1\n")
    code, entries, _, stderr = _verify(tmp_path, "script.py", cwd=tmp_path, fork=fork)
    assert entries == [] and code == 0, (entries, stderr)


def test_requirement_pragmas_are_checked_without_importing_anything(tmp_path, monkeypatch):
    packages = tmp_path / "site"
    (packages / "tsl_probe_pkg" / "sub").mkdir(parents=True)
    witness = tmp_path / "imported_by"
    _write(packages / "tsl_probe_pkg" / "__init__.py", f"import os\nopen({str(witness)!r}, 'a').write(f'{{os.getpid()}}\\n')\n")
    _write(packages / "tsl_probe_pkg" / "sub" / "__init__.py", "")
    fixture = "# torchsync-fixture: steps=2 requires={}\nprint('RESULT {{}}')\n"
    _write(tmp_path / "present.py", fixture.format("tsl_probe_pkg.sub"))
    _write(tmp_path / "absent.py", fixture.format("tsl_probe_pkg.nosuch,tsl_probe_pkg"))
    monkeypatch.syspath_prepend(str(packages))
    out = tmp_path / "report.json"
    code = main(["verify", str(tmp_path / "present.py"), str(tmp_path / "absent.py"), "--backend", "emulate",
                 "--format", "json", "--output-file", str(out)])
    entries = {Path(e["path"]).stem: e for e in json.loads(out.read_text())}
    assert code == 0
    assert "present" not in entries  # ran, nothing to report
    assert entries["absent"]["status"] == "skipped" and entries["absent"]["detail"] == "requires tsl_probe_pkg.nosuch (not importable)"
    assert "tsl_probe_pkg" not in sys.modules
    importers = witness.read_text().split() if witness.exists() else []
    assert str(os.getpid()) not in importers  # a child process may import it to answer; we may not


LATIN1 = """\
# -*- coding: latin-1 -*-
# torchsync-fixture: steps=6 warmup=1
# Entraînement: a script saved in latin-1, as older editors do.
import argparse, json
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    running = 0.0
    for _ in range(args.steps):
        loss = model(torch.ones(4, 2, device=device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()  # expect: TSL101 (déjà vu)
    print("RESULT " + json.dumps({"loss": running}))


if __name__ == "__main__":
    main()
"""


def test_compare_fixed_reads_a_script_in_the_encoding_it_declares(tmp_path):
    script = _write(tmp_path / "latin.py", LATIN1, encoding="latin-1")
    code, entries, _, stderr = _verify(tmp_path, str(script), "--compare-fixed")
    assert entries is not None, stderr
    statuses = {(e["line"], e["status"]) for e in entries}
    assert (22, "confirmed") in statuses
    (compared,) = [e for e in entries if e["status"] == "fixed-compared"]
    assert compared["detail"] == "latin.autofixed.py: syncs/step 1 -> 0; RESULT unchanged", compared
    assert code == 0


HANG = """\
import pathlib, time
import torch
model = torch.nn.Linear(2, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(1, 2, device="cuda")).sum()
    loss.backward()
    opt.step()
    total = loss.item()  # expect: TSL101
pathlib.Path(__file__).with_suffix(".started").touch()
while True:
    time.sleep(0.05)
"""


def test_the_deadline_stops_the_script_and_keeps_its_evidence(tmp_path):
    script = _write(tmp_path / "hang.py", HANG)
    code, entries, elapsed, stderr = _verify(tmp_path, str(script), "--timeout", "8", "--warmup", "1")
    assert entries is not None, stderr
    by_status = {e["status"]: e for e in entries}
    assert code == 1 and by_status["timeout"]["failed"]
    assert "the evidence of its 3 step(s) is kept" in by_status["timeout"]["detail"]
    assert by_status["confirmed"]["line"] == 9  # loss.item() seen before the hang
    assert elapsed < 60


@pytest.mark.skipif(not LINUX, reason="signals the verifier from outside")
def test_an_interrupted_verify_still_writes_its_report(tmp_path):
    hang = _write(tmp_path / "hang.py", HANG)
    later = _write(tmp_path / "later.py", "x = 1\n")
    report = tmp_path / "report.json"
    command = [*CLI, "verify", str(hang), str(later), "--backend", "emulate",
               "--jobs", "1", "--format", "json", "--output-file", str(report)]
    with subprocess.Popen(command, cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE) as verify:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not hang.with_suffix(".started").exists():
            time.sleep(0.1)
        verify.send_signal(signal.SIGTERM)  # hang.py is in its endless loop now
        code = verify.wait(timeout=60)
    entries = {(Path(e["path"]).stem, e["status"]) for e in json.loads(report.read_text())}
    assert code == 128 + signal.SIGTERM
    assert ("hang", "interrupted") in entries and ("later", "interrupted") in entries


def test_one_scripts_internal_error_does_not_lose_the_others(tmp_path, monkeypatch):
    from torchsync_lint.verify import command

    real = command.static_expectations

    def flaky(path, names):
        if path.endswith("broken.py"):
            raise RuntimeError("a bug in the verifier")
        return real(path, names)

    monkeypatch.setattr(command, "static_expectations", flaky)
    _write(tmp_path / "broken.py", "x = 1\n")
    _write(tmp_path / "fine.py", "import torch\ntorch.ones(1, device='cuda').item()  # expect-sync: read once\n")
    out = tmp_path / "report.json"
    code = main(["verify", str(tmp_path / "broken.py"), str(tmp_path / "fine.py"), "--backend", "emulate", "--format", "json", "--output-file", str(out)])
    entries = {Path(e["path"]).stem: e for e in json.loads(out.read_text())}
    assert code == 1
    assert entries["broken"]["status"] == "internal-error" and "a bug in the verifier" in entries["broken"]["detail"]
    assert entries["fine"]["status"] == "confirmed"


@pytest.mark.skipif(not LINUX, reason="signals the verifier from outside")
@pytest.mark.parametrize("fork", LAUNCHERS)
def test_nothing_outlives_a_killed_verifier(tmp_path, fork):
    """SIGKILL gives the verifier no chance to clean up: its supervisors see the control pipe
    close and stop the runs themselves."""
    script = _write(tmp_path / "forever.py", """\
        import os, pathlib, time
        pathlib.Path(__file__).with_suffix(".pid").write_text(str(os.getpid()))
        while True:
            time.sleep(0.05)
    """)
    command = [*CLI, "verify", str(script), "--backend", "emulate"]
    with subprocess.Popen(command, cwd=tmp_path, env=_env(fork), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) as verify:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not script.with_suffix(".pid").exists():
            time.sleep(0.1)
        verify.kill()
        verify.wait()
    pid = int(script.with_suffix(".pid").read_text())
    try:
        assert _wait_dead(pid, 15), "the script kept running after the verifier was killed"
    finally:
        _kill(pid)


ESCAPES = """\
import os, pathlib, signal, subprocess, sys, threading, time
import torch
from torch.utils.data import DataLoader, TensorDataset

PIDS = pathlib.Path(__file__).with_suffix(".pids")


def note(pid):
    with open(PIDS, "a") as handle:
        handle.write(f"{pid}\\n")


def quiet():
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def fork_chain(depth):
    # parent -> child -> grandchild, each alive and sleeping
    if depth and os.fork() == 0:
        quiet()
        note(os.getpid())
        fork_chain(depth - 1)
        time.sleep(300)
        os._exit(0)


def double_fork_setsid():
    # the classic daemon: fork, setsid, fork again, the middle one exits at once
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            quiet()
            note(os.getpid())
            time.sleep(300)
        os._exit(0)
    os.wait()


# a daemon in its own session, by way of subprocess
note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True,
                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)
double_fork_setsid()
fork_chain(3)
threading.Thread(target=time.sleep, args=(300,), daemon=True, name="daemon-sleeper").start()
threading.Thread(target=time.sleep, args=(300,), name="forever-writer").start()
os.kill(os.getppid(), signal.SIGKILL)  # the supervisor, the subreaper that was to clean up
fork_chain(2)  # orphans from now on go past the dead supervisor
while len(PIDS.read_text().split()) < 7:
    time.sleep(0.01)

device = "cuda"
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in DataLoader(TensorDataset(torch.randn(256, 4)), batch_size=8):
    loss = model(x.to(device)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.skipif(not LINUX, reason="a killed supervisor's orphans are caught by a Linux child subreaper")
@pytest.mark.parametrize("fork", LAUNCHERS)
def test_nothing_of_a_script_trying_every_escape_outlives_verify(tmp_path, fork):
    """Kill the supervisor, setsid() daemons, a double fork, fork chains before and after the
    kill, a daemon and a non-daemon thread: after verify returns, none of its processes runs,
    and the report names each process the verifier had to kill."""
    (tmp_path / "pyproject.toml").write_text("")
    script = _write(tmp_path / "escapes.py", ESCAPES)
    code, entries, elapsed, stderr = _verify(tmp_path, "escapes.py", "--steps", "3", "--timeout", "90", fork=fork, limit=200)
    pids = [int(p) for p in script.with_suffix(".pids").read_text().split()]
    try:
        assert len(pids) == 7, pids
        left = [pid for pid in pids if not _wait_dead(pid, 2)]
        assert left == [], f"still running after verify returned: {left}"
        assert entries is not None, stderr
        (run,) = [e for e in entries if e["line"] is None]
        assert run["status"] == "stopped" and not run["failed"] and code == 0, run
        detail = run["detail"]
        assert "the script's parent process (the verifier's supervisor) was killed" in detail
        assert "the verifier killed 7 process(es) the run left running" in detail
        for pid in pids:
            assert re.search(rf"\b{pid}\b", detail), (pid, detail)
        assert "ended 1 non-daemon thread(s) still running after the stop (forever-writer)" in detail
        assert elapsed < 90
    finally:
        for pid in pids:
            _kill(pid)
