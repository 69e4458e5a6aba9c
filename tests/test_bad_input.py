"""Bad input never crashes the run: one line naming the file, the others still linted."""

from __future__ import annotations

import json
import os
import sys

import pytest

from torchsync_lint.cli import main

HAZARD = "import torch\nfor x in loader:\n    out = model(x.cuda(non_blocking=True))\n    out.sum().backward()\n    print(out.sum().item())\n"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "ok.py").write_text(HAZARD)
    return tmp_path


def _codes(out):
    return {(d["path"], d["code"]) for d in json.loads(out)}


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("syntax.py", b"import torch\ndef f(:\n    pass\n", "TSL900"),
        ("latin1.py", "x = 'caf\u00e9'  # torch\n".encode("latin-1"), "TSL901"),
        ("binary.py", b"\x00\x01\x02torch\x00", "TSL901"),
        ("badcookie.py", b"# -*- coding: klingon -*-\nimport torch\n", "TSL901"),
    ],
)
def test_broken_file_is_reported_and_others_still_linted(tree, capsys, name, content, code):
    (tree / name).write_bytes(content)
    rc, out, _ = run(capsys, "--format", "json", ".")
    assert rc == 1  # the hazard in ok.py still counts
    assert _codes(out) == {("ok.py", "TSL101"), (f"{name}", code)}
    rc, out, _ = run(capsys, name)
    assert rc == 2  # nothing else found
    assert out.splitlines()[0].startswith(f"{name}:") and code in out.splitlines()[0]
    assert "Traceback" not in out


def test_latin1_with_coding_cookie_is_linted(tree, capsys):
    (tree / "cookie.py").write_bytes("# -*- coding: latin-1 -*-\n".encode() + HAZARD.replace("import torch", "import torch  # caf\u00e9").encode("latin-1"))
    rc, out, _ = run(capsys, "--format", "json", "cookie.py")
    assert rc == 1 and _codes(out) == {("cookie.py", "TSL101")}


def test_utf8_bom_is_linted(tree, capsys):
    (tree / "bom.py").write_bytes(b"\xef\xbb\xbf" + HAZARD.encode())
    rc, out, _ = run(capsys, "--format", "json", "bom.py")
    assert rc == 1 and json.loads(out)[0]["line"] == 5


def test_empty_file(tree, capsys):
    (tree / "empty.py").write_text("")
    assert run(capsys, "empty.py")[0] == 0


def test_missing_path(tree, capsys):
    rc, out, _ = run(capsys, "ok.py", "nope.py")
    assert rc == 1
    assert "nope.py:1:1: TSL902 cannot read: No such file or directory" in out


def test_directory_symlink_loop(tree, capsys):
    (tree / "loop").symlink_to(tree / "loop")
    (tree / "sub").mkdir()
    (tree / "sub" / "up").symlink_to(tree, target_is_directory=True)
    rc, out, _ = run(capsys, "--format", "json", ".", "loop")
    assert rc == 1
    assert _codes(out) == {("ok.py", "TSL101"), ("loop", "TSL902")}


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file(tree, capsys):
    secret = tree / "secret.py"
    secret.write_text(HAZARD)
    secret.chmod(0)
    rc, out, _ = run(capsys, "--format", "json", ".")
    assert ("secret.py", "TSL902") in _codes(out)


def test_unreadable_file_as_root_via_directory_passed_as_file(tree, capsys):
    # Root ignores permissions, so exercise the same error path with a FIFO-free special case:
    # a path that exists but is neither a file nor a directory.
    os.mkfifo(tree / "pipe.py")
    rc, out, _ = run(capsys, "pipe.py", "ok.py")
    assert rc == 1
    assert "pipe.py:1:1: TSL902 not a regular file or directory" in out


def test_huge_file_is_linted(tree, capsys):
    body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(20000))
    (tree / "huge.py").write_text("import torch\n" + body + HAZARD)
    rc, out, _ = run(capsys, "--format", "json", "huge.py")
    assert rc == 1 and [d["code"] for d in json.loads(out)] == ["TSL101"]


def test_deeply_nested_expression_does_not_crash(tree, capsys):
    (tree / "deep.py").write_text("import torch\nx = " + "(" * 500 + "1" + ")" * 500 + "\n")
    rc, out, err = run(capsys, "deep.py")
    assert rc in (0, 2)
    assert "Traceback" not in out + err


def test_rule_crash_is_isolated(tree, capsys, monkeypatch):
    from torchsync_lint.rules.host_sync_ops import TensorFormatInLoop

    def visit_Call(self, node):  # libcst dispatches on the function's __name__
        raise RuntimeError("kaboom")

    monkeypatch.setattr(TensorFormatInLoop, "visit_Call", visit_Call)
    rc, out, _ = run(capsys, "--format", "json", "ok.py")
    assert rc == 1
    assert _codes(out) == {("ok.py", "TSL101"), ("ok.py", "TSL903")}
    assert "kaboom" in out


def test_permission_denied_is_reported(tree, capsys, monkeypatch):
    # Tests often run as root, which ignores file modes; simulate the OS refusing instead.
    import builtins

    real_open = builtins.open

    def guarded_open(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    (tree / "secret.py").write_text(HAZARD)
    monkeypatch.setattr(builtins, "open", guarded_open)
    rc, out, _ = run(capsys, "--format", "json", ".")
    assert rc == 1
    data = json.loads(out)
    assert ("secret.py", "TSL902") in _codes(out) and ("ok.py", "TSL101") in _codes(out)
    assert any("Permission denied" in d["message"] for d in data)


def _deep_files(directory) -> None:
    """The pathological but valid files of issue 16: each used to end the whole run with an
    internal RecursionError (exit 2, empty report)."""
    hazard_then_elifs = HAZARD + "a = 3\nif a == 0:\n    pass\n" + "".join(f"elif a == {i}:\n    pass\n" for i in range(1, 1000))
    (directory / "elifs.py").write_text(hazard_then_elifs)
    (directory / "plus.py").write_text("import torch\nx = torch.ones(3).cuda()\ny = " + " + ".join(["x"] * 400) + "\n")
    (directory / "chains.py").write_text(
        "import torch\nx = 1\n"
        + "a = x" + ".a" * 400 + "\n"
        + "b = " + "f(" * 140 + ")" * 140 + "\n"
        + "c = " + " and ".join(["x"] * 400) + "\n"
        + "d = (" + " ".join(['"s"'] * 400) + ")\n"
        + "e = x" + "[0]" * 400 + "\n"
    )


@pytest.mark.parametrize("extra", [[], ["--jobs", "2"], ["--fix", "--unsafe-fixes"]], ids=["serial", "jobs", "fix"])
def test_deep_files_and_special_files_cost_one_line_each_not_the_run(tmp_path, extra):
    """Issue 16, "Done when": a 1,000-`elif` file, a 400-term expression, chains of 400
    attributes/subscripts/`and`s/strings and 140 nested calls, a FIFO and a /dev/zero symlink next
    to an ordinary file with a hazard: the hazard is reported, a deep file is linted or costs a
    per-file error (never an internal error), the special files are skipped with a note, exit 1,
    and stderr stays small."""
    import subprocess
    import time

    (tmp_path / "ok.py").write_text(HAZARD)
    _deep_files(tmp_path)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    command = [sys.executable, "-m", "torchsync_lint", "check", "--isolated", "--no-cache", "--select", "ALL", *extra, "--format", "json", "."]
    started = time.monotonic()
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr[-2000:]
    assert elapsed < 30
    assert len(done.stderr.encode()) < 10_000
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "skipped fifo.py" in done.stderr and "skipped zero.py" in done.stderr
    report = json.loads(done.stdout)
    by_file: dict[str, set[str]] = {}
    for finding in report:
        by_file.setdefault(finding["path"], set()).add(finding["code"])
    assert "TSL101" in by_file["ok.py"]
    assert "TSL101" in by_file["elifs.py"]  # the elif chain no longer costs the file its positions
    assert not {"fifo.py", "zero.py"} & set(by_file)
    assert not any(finding["code"] == "TSL900" for finding in report)  # all of them are valid Python
    for name in ("ok.py", "elifs.py", "plus.py", "chains.py"):  # under --fix: still valid Python
        compile((tmp_path / name).read_text(), name, "exec")


def test_a_position_that_overflows_libcsts_provider_is_a_per_file_error(tree, capsys, monkeypatch):
    """When the fast positions cannot pair a statement, libcst's provider is the fallback; on a
    deep module it overflows and re-raises as a KeyError holding the deep node, whose repr
    overflows again. That must be one TSL903 line, not an internal error."""
    from torchsync_lint.analysis import positions

    monkeypatch.setattr(positions._StatementLines, "start_of", lambda self, unit: None)  # force the fallback
    _deep_files(tree)
    rc, out, err = run(capsys, "--isolated", "--no-cache", "--select", "ALL", "--format", "json", "ok.py", "elifs.py")
    assert rc == 1
    codes = _codes(out)
    assert ("ok.py", "TSL101") in codes
    assert any(path == "elifs.py" and code in ("TSL101", "TSL903") for path, code in codes)
    assert "Traceback" not in err and len(out) < 20_000
