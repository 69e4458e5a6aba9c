"""The reproducers of issue 23 (../shared/repro/writes_and_verify/), each giving what its
README expects. Their inputs are copied into tests/data/writes_and_verify/.

The two that fill a disk run on a real 64 KiB tmpfs in a private mount namespace where that
is allowed (root); the same cases run everywhere on a simulated full disk in
test_atomic_writes.py. The escape of a script that kills its supervisor is in
test_verify_containment.py (with every other escape at once).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from unittest import mock

import pytest

from torchsync_lint import engine
from torchsync_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "writes_and_verify"
CLI = [sys.executable, "-c", "import sys; del sys.path[0]; from torchsync_lint.cli import main; sys.exit(main(sys.argv[1:]))"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def copy(name: str, to: Path) -> Path:
    target = to / name
    shutil.copyfile(DATA / name, target)
    return target


def findings(out: str) -> list[str]:
    """`path:cell N:line:col: CODE` of each finding in a text report."""
    return [re.match(r"(.*?: TSL\d+) ", line).group(1) for line in out.splitlines() if ": TSL" in line]


def env(**extra: str) -> dict[str, str]:
    values = dict(os.environ)
    values["PYTHONPATH"] = str(ROOT) + (os.pathsep + values["PYTHONPATH"] if values.get("PYTHONPATH") else "")
    values.update(extra)
    return values


# -- notebook-fix-overwrites-concurrent-save ---------------------------------------------------

def _autosave(path: Path) -> None:
    """What Jupyter's autosave (or an editor) does meanwhile: a new cell, or a new line."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        nb["cells"].append({"cell_type": "markdown", "id": "new", "metadata": {}, "source": ["USER_EDIT\n"]})
        path.write_text(json.dumps(nb, indent=1))
    else:
        path.write_text(path.read_text() + "USER_EDIT = 1\n")


@pytest.mark.parametrize("action", ["--fix", "--add-noqa"])
@pytest.mark.parametrize("name", ["control.ipynb", "crlf.py"])
def test_a_file_saved_while_it_is_fixed_is_left_as_the_user_saved_it(tmp_path, action, name):
    target = copy(name, tmp_path)
    real, saved = engine.lint_source, []

    def lint_source(*args, **kwargs):
        if not saved:  # the user saves while the tool is working on what it read
            _autosave(target)
            saved.append(target.read_bytes())
        return real(*args, **kwargs)

    with mock.patch.object(engine, "lint_source", lint_source):
        code, _, err = run("check", "--isolated", "--no-cache", action, str(target))
    assert target.read_bytes() == saved[0] and b"USER_EDIT" in saved[0]
    assert code != 0 and "the file changed on disk since it was read; it was left as it is" in err
    # run again: now it lands on the user's text
    code, _, _ = run("check", "--isolated", "--no-cache", action, str(target))
    assert b"USER_EDIT" in target.read_bytes() and target.read_bytes() != saved[0]


# -- fix-hardlink-disk-full-truncates, cache-disk-full-tmp-leak (a real tmpfs) -----------------

def _can_mount() -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="mounting a tmpfs needs root and unshare(1); test_atomic_writes.py simulates it")

HARDLINK = r"""
set -e
mount -t tmpfs -o size=64k tmpfs "$MNT"
cd "$MNT"
"$PY" - <<'PY'
body = '''import torch
model = torch.nn.Linear(4, 1).cuda()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=True, num_workers=2)
for (x,) in loader:
    x = x.cuda()
    loss = model(x).mean()
    loss.backward()
'''
open("train.py", "w").write("#" + "x" * (4090 - len(body) - 2) + "\n" + body)
PY
cp train.py "$OUT/orig.py"
ln train.py train_link.py
"$PY" -c "
import os
st = os.statvfs('.')
open('fill', 'wb').write(b'x' * (st.f_bavail * st.f_frsize - $SPARE))"
set +e
"${CLI[@]}" check --isolated --no-cache --fix train.py > "$OUT/out.txt" 2>&1
echo $? > "$OUT/rc"
cp train.py "$OUT/after.py"; cmp -s train.py train_link.py && echo same > "$OUT/links"
ls -a > "$OUT/ls"
"""


@needs_mount
@pytest.mark.parametrize("spare", [0, 2 * 4096], ids=["no-room", "two-pages"])
def test_fix_on_a_hard_linked_file_of_a_full_tmpfs_keeps_its_bytes_whole(tmp_path, spare):
    out, mnt = tmp_path / "out", tmp_path / "mnt"
    out.mkdir()
    mnt.mkdir()
    script = "CLI=(" + " ".join(f"'{c}'" for c in CLI) + ")\n" + HARDLINK
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script], capture_output=True, text=True, timeout=240,
                          env=env(MNT=str(mnt), OUT=str(out), PY=sys.executable, SPARE=str(spare)))
    assert done.returncode == 0, done.stderr
    original, after, report = (out / "orig.py").read_text(), (out / "after.py").read_text(), (out / "out.txt").read_text()
    assert (out / "links").read_text().strip() == "same"
    compile(after, "train.py", "exec")  # never cut off
    if after == original:
        assert "No space left on device; the file was left as it is; its fixes were not applied" in report
        assert (out / "rc").read_text().strip() == "1"
    else:  # there was room: the whole fix landed, on both names
        assert after == original.replace("x = x.cuda()", "x = x.cuda(non_blocking=True)") and "Fixed 1 finding" in report
    assert sorted((out / "ls").read_text().split()) == [".", "..", "fill", "train.py", "train_link.py"]
    if spare == 0:
        assert after == original


CACHE = r"""
set -e
mount -t tmpfs -o size=40k tmpfs "$MNT"
cp "$PROJECT"/* "$MNT"/
cd "$MNT"
"$PY" -c "open('fill', 'wb').write(b'x' * 20000)"
set +e
for run in 1 2 3; do "${CLI[@]}" check -q . > /dev/null 2>> "$OUT/err"; echo $? >> "$OUT/rc"; done
find . -name '.tmp-*' -o -name '*.tsl-tmp' > "$OUT/partial"
"""


@needs_mount
def test_a_full_tmpfs_leaves_no_partial_cache_entry(tmp_path):
    project, out = tmp_path / "project", tmp_path / "out"
    project.mkdir()
    out.mkdir()
    (project / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    shutil.copyfile(ROOT / "tests" / "data" / "hazards.py", project / "train.py")
    script = "CLI=(" + " ".join(f"'{c}'" for c in CLI) + ")\n" + CACHE
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script], capture_output=True, text=True, timeout=300,
                          env=env(MNT=str(mnt), OUT=str(out), PY=sys.executable, PROJECT=str(project)))
    assert done.returncode == 0, done.stderr
    assert (out / "rc").read_text().split() == ["1", "1", "1"]  # the findings, every run, with or without a cache
    assert (out / "partial").read_text() == ""


# -- diff-not-applicable-latin1-bom-cr -------------------------------------------------------------

@pytest.mark.skipif(shutil.which("patch") is None or shutil.which("git") is None, reason="needs patch and git")
@pytest.mark.parametrize("name", ["latin1.py", "bom.py", "cr_only.py", "crlf.py"])
def test_the_diff_applied_by_patch_and_git_apply_gives_the_bytes_fix_writes(tmp_path, name):
    copies = {}
    for d in ("fix", "patch", "git"):
        (tmp_path / d / "files").mkdir(parents=True)
        copies[d] = tmp_path / d / "files" / name
        shutil.copyfile(DATA / name, copies[d])
    options = ["check", "--isolated", "--no-cache", "--unsafe-fixes"]
    subprocess.run([*CLI, *options, "--fix", f"files/{name}"], cwd=tmp_path / "fix", env=env(), capture_output=True, timeout=120)
    diff = subprocess.run([*CLI, *options, "--diff", f"files/{name}"], cwd=tmp_path / "patch", env=env(), capture_output=True, timeout=120).stdout
    assert copies["fix"].read_bytes() != (DATA / name).read_bytes(), "the case has a fix"
    (tmp_path / "d.patch").write_bytes(diff)
    patched = subprocess.run(["patch", "-p0", "--binary", "-s", "-i", str(tmp_path / "d.patch")], cwd=tmp_path / "patch", capture_output=True)
    applied = subprocess.run(["git", "apply", "-p0", str(tmp_path / "d.patch")], cwd=tmp_path / "git", capture_output=True)
    assert patched.returncode == 0 and applied.returncode == 0, (patched.stderr, applied.stderr)
    assert copies["patch"].read_bytes() == copies["fix"].read_bytes() == copies["git"].read_bytes()


def test_a_diff_that_cannot_be_written_in_the_files_encoding_says_why(tmp_path):
    from torchsync_lint.fixing.command import DiffError, unified_diff

    with pytest.raises(DiffError, match="cannot be written in the file's encoding"):
        unified_diff("x = 1\n", "x = 'é€'\n", "t.py", "latin-1")


# -- add-noqa-cr-only-silent ---------------------------------------------------------------------

def test_add_noqa_on_a_cr_only_file_adds_the_directive(tmp_path):
    target = copy("noqa_cr_only.py", tmp_path)
    code, _, err = run("check", "--isolated", "--add-noqa", str(target))
    assert (code, err.strip()) == (0, "Added 1 noqa directive in 1 file.")
    data = target.read_bytes()
    assert b"v = loss.item()  # noqa: TSL101\r" in data and b"\n" not in data  # its own line ends
    assert run("check", "--isolated", "--no-cache", str(target))[0] == 0


def test_add_noqa_reports_a_finding_it_could_not_silence_and_fails(tmp_path):
    target = copy("noqa_cr_only.py", tmp_path)
    with mock.patch("torchsync_lint.add_noqa.add_noqa", lambda text, found: (text, 0)):  # no line could take one
        code, _, err = run("check", "--isolated", "--add-noqa", str(target))
    assert code == 1 and f"{target}:11:9: TSL101 could not be silenced with a `# noqa` comment" in err
    assert target.read_bytes() == (DATA / "noqa_cr_only.py").read_bytes()


# -- notebook-magic-continuation, notebook-marker-comment, notebook-cr-only-source -----------------

def test_a_line_magic_continued_with_a_backslash_is_masked_and_the_rest_linted(tmp_path):
    code, out, _ = run("check", "-q", "--no-cache", "--isolated", str(DATA / "magic.ipynb"))
    assert code == 1 and findings(out) == [f"{DATA / 'magic.ipynb'}:cell 2:7:9: TSL101"]
    control = run("check", "-q", "--no-cache", "--isolated", str(DATA / "magic_control.ipynb"))[1]
    assert findings(control) == [f"{DATA / 'magic_control.ipynb'}:cell 2:6:9: TSL101"]  # one line less above the loop
    target = copy("magic.ipynb", tmp_path)
    assert run("check", "--isolated", "--add-noqa", str(target))[0] == 0
    cell = json.loads(target.read_text())["cells"][1]["source"]
    assert cell[:2] == ["%time y = \\\n", "    1 + 1\n"] and cell[-1] == "    v = loss.item()  # noqa: TSL101\n"


def test_user_text_is_never_taken_for_the_tools_own_cell_markers(tmp_path):
    code, out, _ = run("check", "-q", "--no-cache", "--isolated", str(DATA / "marker.ipynb"))
    shown = str(DATA / "marker.ipynb")
    assert findings(out) == [f"{shown}:cell 2:3:9: TSL301", f"{shown}:cell 2:6:9: TSL101"]
    target = copy("marker.ipynb", tmp_path)
    code, out, err = run("check", "--no-cache", "--isolated", "--fix", str(target))
    cell = json.loads(target.read_text())["cells"][1]["source"]
    assert "Fixed 1 finding" in out and cell[0] == "# @tsl-cell 7\n" and cell[2] == "    x = x.cuda(non_blocking=True)\n"


def test_a_comment_that_looks_like_an_ipython_tag_is_the_users(tmp_path):
    source = (DATA / "marker.ipynb").read_text().replace('"# @tsl-cell 7\\n"', '"y = 1  # @tsl-ipython 0\\n"')
    target = tmp_path / "tag.ipynb"
    target.write_text(source)
    code, out, err = run("check", "--no-cache", "--isolated", "--fix", str(target))
    cells = json.loads(target.read_text())["cells"]
    assert "Fixed 1 finding" in out, err
    assert cells[0]["source"][0] == "%matplotlib inline\n" and cells[1]["source"][0] == "y = 1  # @tsl-ipython 0\n"


def test_cell_lines_ending_in_cr_give_the_lines_and_findings_of_lf(tmp_path):
    def at(name: str) -> list[str]:
        out = run("check", "-q", "--no-cache", "--isolated", str(DATA / name))[1]
        return [f.split(":", 1)[1] for f in findings(out)]

    assert at("cr.ipynb") == at("control.ipynb") == ["cell 2:3:9: TSL301", "cell 2:6:9: TSL101"]
    assert at("cr_nomagic.ipynb") == ["cell 2:2:9: TSL301", "cell 2:5:9: TSL101"]  # no `%%time` line above
    target = copy("cr.ipynb", tmp_path)
    assert run("check", "--no-cache", "--isolated", "--fix", str(target))[0] == 1  # TSL101 remains
    cell = json.loads(target.read_text())["cells"][1]["source"]
    assert cell[0] == "%%time\r" and cell[2] == "    x = x.cuda(non_blocking=True)\r" and all(line.endswith("\r") for line in cell)


# -- verify-timeout-nan, verify-compare-fixed-tempdir-leak, verify-setup-py-root, ---------------
# -- verify-nondaemon-thread-timeout --------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "-5", "0", "inf"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(tmp_path, value):
    started = time.monotonic()
    done = subprocess.run([*CLI, "verify", "spin.py", "--timeout", value], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"argument --timeout: must be a positive number of seconds, not '{value}'" in done.stderr
    assert time.monotonic() - started < 30


def _verify(tmp_path: Path, *args: str, cwd: Path, tmpdir: Path | None = None) -> tuple[int, list[dict], float]:
    report = tmp_path / "report.json"
    extra = {"TMPDIR": str(tmpdir)} if tmpdir else {}
    started = time.monotonic()
    done = subprocess.run([*CLI, "verify", *args, "--backend", "emulate", "--format", "json", "--output-file", str(report)],
                          cwd=cwd, env=env(**extra), capture_output=True, text=True, timeout=240)
    assert report.exists(), done.stderr
    return done.returncode, json.loads(report.read_text()), time.monotonic() - started


def test_compare_fixed_leaves_nothing_behind_and_says_what_became_of_result(tmp_path):
    pytest.importorskip("torch")
    project, tmpdir = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    tmpdir.mkdir()
    (project / "pyproject.toml").write_text("")
    copy("compare_fixed.py", project)
    code, entries, _ = _verify(tmp_path, "compare_fixed.py", "--steps", "3", "--compare-fixed", cwd=project, tmpdir=tmpdir)
    (compared,) = [e for e in entries if e["status"] == "fixed-compared"]
    assert compared["detail"] == ("compare_fixed.autofixed.py: syncs/step 2 -> 1; outputs not compared (neither version ended its output "
                                  "with a `RESULT {json}` line, the only output verify compares)")
    assert "None -> None" not in json.dumps(entries)
    assert [name for name in os.listdir(tmpdir) if name.startswith("torchsync")] == [] and code == 0  # (torch keeps its own caches there)


def test_a_setup_py_project_gets_the_root_and_sys_path_of_check(tmp_path):
    pytest.importorskip("torch")
    from torchsync_lint.project.layout import project_root
    from torchsync_lint.verify import scripts

    project = tmp_path / "p"
    shutil.copytree(DATA / "setup_py_project", project)
    script = project / "scripts" / "train.py"
    assert project_root(str(script)) == (project.resolve(), True)  # what check uses (Sessions.for_files)
    options = scripts.run_options(str(script))
    assert options.cwd == str(project.resolve()) and options.fallback_path == [str(project.resolve()), str((project / "src").resolve())]
    code, entries, _ = _verify(tmp_path, "scripts/train.py", "--steps", "3", cwd=project)
    statuses = {e["status"] for e in entries}
    assert "crashed" not in statuses and "stopped" in statuses and code == 0, entries


@pytest.mark.parametrize("fork", ["1", "0"], ids=["fork-server", "fresh"])
def test_a_non_daemon_thread_does_not_turn_a_stopped_run_into_a_timeout(tmp_path, fork, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("TORCHSYNC_VERIFY_FORK", fork)
    (tmp_path / "pyproject.toml").write_text("")
    copy("nondaemon_thread.py", tmp_path)
    code, entries, elapsed = _verify(tmp_path, "nondaemon_thread.py", "--steps", "3", "--timeout", "60", cwd=tmp_path)
    (stopped,) = [e for e in entries if e["line"] is None]
    assert stopped["status"] == "stopped" and not stopped["failed"]
    assert "ended 1 non-daemon thread(s) still running after the stop (Thread-1 (writer))" in stopped["detail"]
    assert code == 0 and elapsed < 45, elapsed


def test_the_thread_note_is_only_for_threads_that_outlast_the_stop():
    from torchsync_lint.verify import runner

    record = {"events": [], "step_basis": "optimizer", "total_steps": 3, "stopped": "steps", "stop_note": "stopped", "threads_ended": []}
    assert runner._classify(record, 0, "", "", 1.0).notes == ["stopped"]


def test_a_fix_read_from_stdin_comes_back_in_the_encoding_it_was_sent_in(tmp_path):
    """An editor replaces its buffer with what `--fix -` prints: the bytes `--fix` would write
    to the file (latin-1 stays latin-1)."""
    data = (DATA / "latin1.py").read_bytes()
    options = ["check", "--isolated", "--no-cache", "--unsafe-fixes", "--fix"]
    done = subprocess.run([*CLI, *options, "-", "--stdin-filename", "latin1.py"], input=data, env=env(), capture_output=True, timeout=120)
    target = copy("latin1.py", tmp_path)
    subprocess.run([*CLI, *options, str(target)], env=env(), capture_output=True, timeout=120)
    assert done.stdout == target.read_bytes() != data
    assert b'"\xe9"' in done.stdout  # é as latin-1, not UTF-8
