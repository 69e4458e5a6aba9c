"""The fixer engine on synthetic findings, and `--fix`/`--diff` end to end on real files."""

from __future__ import annotations

import os
import re
import stat
import types

import pytest

from torchsync_lint.cli import main
from torchsync_lint.fixer import fix_source, run_fix_command
from torchsync_lint.rules.host_sync import HostReadInLoop
from torchsync_lint.types import Applicability, Edit, Finding, Fix

SAFE, UNSAFE, SUGGESTION = Applicability.SAFE, Applicability.UNSAFE, Applicability.SUGGESTION


# -- a tiny regex "rule" whose findings carry fixes, recomputed on every round ----------------

def _position(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = len(re.findall(r"\r\n|\r|\n", before)) + 1
    last = max(before.rfind("\n"), before.rfind("\r"))
    return line, offset - last


def regex_rule(pattern: str, replacement: str, code: str = "TSL801", applicability=SAFE, imports=(), path: str = "f.py"):
    def lint(text: str) -> list[Finding]:
        out = []
        for m in re.finditer(pattern, text):
            line, col = _position(text, m.start())
            end_line, end_col = _position(text, m.end())
            content = m.expand(replacement)
            fix = Fix(f"rewrite {code}", (Edit(line, col, end_line, end_col, content),), applicability, tuple(imports))
            out.append(Finding(path, line, col, end_line, end_col, code, "test-rule", "msg", fix=fix))
        return out

    return lint


def combined(*lints):
    return lambda text: sorted((f for lint in lints for f in lint(text)), key=lambda f: f.sort_key)


def fix(text, lint, unsafe=False, **kw):
    return fix_source(text, "f.py", unsafe=unsafe, lint=lint, **kw)


# -- applying -----------------------------------------------------------------------------------

def test_applies_fix_and_keeps_comments_and_formatting():
    src = "x = load(  # the batch\n    path ,\n)\n# trailing comment\ny = x.to( device )  # keep me\n"
    result = fix(src, regex_rule(r"\.to\( device \)", ".to( device, non_blocking=True )"))
    assert result.new_source == "x = load(  # the batch\n    path ,\n)\n# trailing comment\ny = x.to( device, non_blocking=True )  # keep me\n"
    assert [f.code for f in result.applied] == ["TSL801"]
    assert result.converged and not result.refused and result.remaining == []


def test_overlapping_fixes_first_wins_and_the_rest_wait_a_round():
    outer = regex_rule(r"foo\((bar\(1\))\)", r"qux(\1)", code="TSL802")
    inner = regex_rule(r"bar\(1\)", "baz(1)", code="TSL801")
    result = fix("v = foo(bar(1))\n", combined(outer, inner))
    assert result.new_source == "v = qux(baz(1))\n"
    assert [f.code for f in result.applied] == ["TSL802", "TSL801"]  # outer starts first
    assert result.rounds == 2


def test_non_overlapping_fixes_apply_in_one_round():
    result = fix("a = f(1)\nb = f(2)\n", regex_rule(r"f\((\d)\)", r"g(\1)"))
    assert result.new_source == "a = g(1)\nb = g(2)\n"
    assert result.rounds == 1 and len(result.applied) == 2


def test_identical_fix_on_several_findings_is_applied_once_and_credited_to_all():
    edit = Edit(1, 1, 1, 2, "y")

    def lint(text):
        if not text.startswith("x"):
            return []
        same = Fix("rename", (edit,), SAFE)
        return [Finding("f.py", 1, 1, 1, 2, "TSL801", "n", "m", fix=same), Finding("f.py", 2, 1, 2, 2, "TSL801", "n", "m", fix=same)]

    result = fix("x = 1\nx\n", lint)
    assert result.new_source == "y = 1\nx\n"
    assert len(result.applied) == 2 and not result.refused


def test_applicability_levels():
    text = "a = f(1)\n"
    assert fix(text, regex_rule(r"f\(1\)", "g(1)", applicability=UNSAFE)).new_source == text
    assert fix(text, regex_rule(r"f\(1\)", "g(1)", applicability=UNSAFE), unsafe=True).new_source == "a = g(1)\n"
    sugg = regex_rule(r"f\(1\)", "g(1)", applicability=SUGGESTION)
    assert fix(text, sugg, unsafe=True).new_source == text
    assert fix(text, sugg, suggestions=True).new_source == "a = g(1)\n"


# -- imports ------------------------------------------------------------------------------------

def _needs(module: str):
    return regex_rule(r"(?<![.\w])make\(\)", f"{module}.make()", imports=(module,))


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        pytest.param(
            '"""Doc."""\nfrom __future__ import annotations\n\nx = make()\n',
            '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\nx = torch.make()\n',
            id="after-docstring-and-future",
        ),
        pytest.param(
            "import os\nimport sys  # why\n\n\ndef f():\n    return make()\n",
            "import os\nimport sys  # why\nimport torch\n\n\ndef f():\n    return torch.make()\n",
            id="after-last-import",
        ),
        pytest.param(
            "import os\n\nx = make()\nimport late\n",
            "import os\nimport torch\n\nx = torch.make()\nimport late\n",
            id="before-the-first-use",
        ),
        pytest.param(
            "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = make()\n",
            "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport torch\nx = torch.make()\n",
            id="after-shebang-and-cookie",
        ),
        pytest.param("import torch\nx = make()\n", "import torch\nx = torch.make()\n", id="already-imported"),
        pytest.param("import torch.nn\nx = make()\n", "import torch.nn\nx = torch.make()\n", id="bound-by-dotted-import"),
        pytest.param(
            "import torch.nn as nn\nx = make()\n", "import torch.nn as nn\nimport torch\nx = torch.make()\n", id="alias-does-not-bind-torch"
        ),
        pytest.param(
            "try:\n    import torch\nexcept ImportError:\n    torch = None\nx = make()\n",
            "try:\n    import torch\nexcept ImportError:\n    torch = None\nx = torch.make()\n",
            id="imported-in-try",
        ),
        pytest.param("import os\nx = make()", "import os\nimport torch\nx = torch.make()", id="no-trailing-newline"),
        pytest.param("x = make()", "import torch\nx = torch.make()", id="no-imports-no-newline"),
    ],
)
def test_imports_are_added_once_in_the_right_place(src, expected):
    result = fix(src, _needs("torch"))
    assert result.new_source == expected, result.refused
    assert result.new_source.count("import torch\n") + result.new_source.endswith("import torch") <= 1


def test_two_fixes_needing_one_import_add_it_once():
    result = fix("import os\na = make()\nb = make()\n", _needs("torch"))
    assert result.new_source == "import os\nimport torch\na = torch.make()\nb = torch.make()\n"


def test_import_that_clashes_with_a_module_binding_is_refused():
    result = fix("torch = None\nx = make()\n", _needs("torch"))
    assert result.new_source == "torch = None\nx = make()\n"
    assert len(result.refused) == 1 and "binds that name" in result.refused[0][1]


# -- refusal, convergence -------------------------------------------------------------------------

def test_fix_that_breaks_syntax_is_refused_and_the_others_still_apply():
    broken = regex_rule(r"f\(1\)", "f(1", code="TSL802")
    good = regex_rule(r"g\(2\)", "h(2)", code="TSL801")
    src = "a = f(1)\nb = g(2)\n"
    result = fix(src, combined(broken, good))
    assert result.new_source == "a = f(1)\nb = h(2)\n"
    assert [f.code for f in result.applied] == ["TSL801"]
    assert [(f.code, f.line) for f, _ in result.refused] == [("TSL802", 1)]
    assert "would not parse" in result.refused[0][1]
    assert [f.code for f in result.remaining] == ["TSL802"]  # still reported, still unfixed
    assert result.converged


def test_fix_that_parses_but_does_not_compile_is_refused():
    result = fix("x = 1\n", regex_rule(r"^x = 1", "return 1"))
    assert result.new_source == "x = 1\n"
    assert "would not compile" in result.refused[0][1]


def test_edit_outside_the_file_is_refused():
    bad = Fix("t", (Edit(7, 1, 7, 3, "x"),), SAFE)
    result = fix("a = 1\n", lambda text: [Finding("f.py", 1, 1, 1, 2, "TSL801", "n", "m", fix=bad)])
    assert result.new_source == "a = 1\n"
    assert "outside the file" in result.refused[0][1]


def test_non_convergence_is_reported_after_the_cap():
    result = fix("x = 1\n", regex_rule(r"\d+$", r"\g<0>1"), max_rounds=4)  # 1 -> 11 -> 111 ...
    assert not result.converged
    assert result.rounds == 4 and result.new_source == "x = 11111\n"


def test_fixes_that_undo_each_other_stop_early():
    result = fix("x = a\n", combined(regex_rule(r"= a", "= b"), regex_rule(r"= b", "= a", code="TSL802")))
    assert not result.converged and result.rounds == 2


# -- newlines and encodings in the pure core ------------------------------------------------------

def test_crlf_source_gets_crlf_edits_and_imports():
    src = "import os\r\nx = make()\r\n"
    lint = regex_rule(r"(?<![.\w])make\(\)", "torch.make(\n    1,\n)", imports=("torch",))
    result = fix(src, lint)
    assert result.new_source == "import os\r\nimport torch\r\nx = torch.make(\r\n    1,\r\n)\r\n"


# -- the CLI end to end, with TSL101's accumulate fix (UNSAFE) -----------------------------------

CASE = next(case for case in HostReadInLoop.INVALID if case.expected_fix and "running = 0.0" in case.code)
ARGS = ["--isolated", "--select", "TSL101"]


def _write(path, text: str, *, newline="\n", encoding="utf-8", bom=False):
    data = text.replace("\n", newline).encode(encoding)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def test_fix_writes_the_fixed_file_and_summarises(tmp_path, capsys):
    target = _write(tmp_path / "train.py", CASE.code)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 0
    assert target.read_text() == CASE.expected_fix
    out = capsys.readouterr().out
    assert "Fixed 1 finding (TSL101: 1) in 1 file." in out


def test_fix_without_unsafe_leaves_unsafe_fixes_alone(tmp_path, capsys):
    target = _write(tmp_path / "train.py", CASE.code)
    before = os.stat(target)
    assert main(["--fix", *ARGS, str(target)]) == 1  # the finding remains
    assert target.read_text() == CASE.code
    assert os.stat(target).st_mtime_ns == before.st_mtime_ns
    out = capsys.readouterr().out
    assert "1 finding remains (TSL101: 1) (1 fixable with `--fix --unsafe-fixes`)." in out
    assert f"{target}:{CASE.line}:" in out  # the remaining finding is listed


@pytest.mark.parametrize(
    ("newline", "encoding", "bom", "extra"),
    [("\r\n", "utf-8", False, ""), ("\n", "utf-8", True, "# café\n"), ("\n", "latin-1", False, "# -*- coding: latin-1 -*-\n# café\n"), ("\r", "utf-8", False, "")],
    ids=["crlf", "bom", "latin1-cookie", "cr"],
)
def test_encoding_bom_and_newlines_round_trip(tmp_path, newline, encoding, bom, extra):
    target = _write(tmp_path / "train.py", extra + CASE.code, newline=newline, encoding=encoding, bom=bom)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 0
    expected = (b"\xef\xbb\xbf" if bom else b"") + (extra + CASE.expected_fix).replace("\n", newline).encode(encoding)
    assert target.read_bytes() == expected


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_permissions_are_kept(tmp_path, mode):
    target = _write(tmp_path / "train.py", CASE.code)
    os.chmod(target, mode)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 0
    assert target.read_text() == CASE.expected_fix
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary file left behind


def test_read_only_file_is_reported_and_the_others_are_fixed(tmp_path, capsys):
    locked = _write(tmp_path / "a_locked.py", CASE.code)
    free = _write(tmp_path / "b_free.py", CASE.code)
    os.chmod(locked, 0o444)
    try:
        assert main(["--fix", "--unsafe-fixes", *ARGS, str(tmp_path)]) == 1  # the locked file's finding remains
        assert locked.read_text() == CASE.code
        assert free.read_text() == CASE.expected_fix
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if "a_locked.py" in ln]
        assert len(lines) == 1 and "read-only" in lines[0]
    finally:
        os.chmod(locked, 0o644)


def test_unwritable_directory_is_reported_not_crashed_on(tmp_path, capsys, monkeypatch):
    import torchsync_lint.atomic as atomic

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    target = _write(tmp_path / "train.py", CASE.code)
    monkeypatch.setattr(atomic, "_create_temp", refuse)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 1
    assert target.read_text() == CASE.code
    err = capsys.readouterr().err
    assert f"{target}: cannot write in {tmp_path}: Permission denied; its fixes were not applied" in err


def test_nothing_to_fix_means_no_write(tmp_path):
    clean = _write(tmp_path / "clean.py", "import torch\nx = torch.zeros(3)\n")
    before = os.stat(clean)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(clean)]) == 0
    after = os.stat(clean)
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)


def test_fixing_twice_changes_nothing(tmp_path, capsys):
    target = _write(tmp_path / "train.py", CASE.code)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 0
    once = target.read_bytes()
    stamp = os.stat(target).st_mtime_ns
    capsys.readouterr()
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(target)]) == 0
    assert target.read_bytes() == once and os.stat(target).st_mtime_ns == stamp
    assert "Fixed 0 findings in 0 files." in capsys.readouterr().out


def test_fix_through_a_symlink_keeps_the_link(tmp_path):
    real = _write(tmp_path / "real.py", CASE.code)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert main(["--fix", "--unsafe-fixes", *ARGS, str(link)]) == 0
    assert link.is_symlink() and real.read_text() == CASE.expected_fix


def test_diff_writes_nothing_and_exits_1(tmp_path, capsys):
    target = _write(tmp_path / "train.py", CASE.code)
    before = os.stat(target)
    assert main(["--diff", "--unsafe-fixes", *ARGS, str(target)]) == 1
    assert target.read_text() == CASE.code and os.stat(target).st_mtime_ns == before.st_mtime_ns
    out = capsys.readouterr().out
    assert out.startswith(f"--- {target}\n+++ {target}\n@@ ")
    assert "\n-    running += loss.item()\n" in out and "\n+    running += loss.detach().double()\n" in out


def test_diff_with_nothing_to_fix_exits_0(tmp_path, capsys):
    target = _write(tmp_path / "train.py", CASE.code)
    assert main(["--diff", *ARGS, str(target)]) == 0  # the only fix is unsafe
    assert capsys.readouterr().out == ""


def _args(**kw):
    base = dict(fix=False, diff=False, unsafe_fixes=None, format="text", quiet=False, exit_zero=False, output_file=None, stdin_filename=None)
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_suggestions_are_in_neither_fix_nor_diff(tmp_path, capsys):
    # --diff is exactly what --fix writes (issue 15: `patch -p0` applied a suggestion); the
    # summary points at --show-suggestions instead.
    from torchsync_lint.config import Config

    target = _write(tmp_path / "train.py", "x = f(1)\n")
    factory = lambda path, config: regex_rule(r"f\(1\)", "g(1)", applicability=SUGGESTION)  # noqa: E731
    assert run_fix_command(_args(fix=True), Config(unsafe_fixes=True), [str(target)], lint_factory=factory) == 1
    assert target.read_text() == "x = f(1)\n"
    capsys.readouterr()
    for config in (Config(), Config(unsafe_fixes=True)):
        assert run_fix_command(_args(diff=True), config, [str(target)], lint_factory=factory) == 0
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "1 suggestion not in the diff" in captured.err and "--show-suggestions" in captured.err
    assert target.read_text() == "x = f(1)\n"


def test_refused_fix_is_reported_by_the_command(tmp_path, capsys):
    from torchsync_lint.config import Config

    target = _write(tmp_path / "train.py", "x = f(1)\n")
    factory = lambda path, config: regex_rule(r"f\(1\)", "f(1", path=path)  # noqa: E731
    assert run_fix_command(_args(fix=True), Config(), [str(target)], lint_factory=factory) == 1
    assert target.read_text() == "x = f(1)\n"
    assert f"{target}:1:5: TSL801 fix refused: the fixed code would not parse" in capsys.readouterr().err


def test_non_convergence_is_reported_by_the_command(tmp_path, capsys):
    from torchsync_lint.config import Config

    target = _write(tmp_path / "grow.py", "x = 1\n")
    factory = lambda path, config: regex_rule(r"\d+$", r"\g<0>1", path=path)  # noqa: E731 - never reaches a fixed point
    assert run_fix_command(_args(fix=True), Config(), [str(target)], lint_factory=factory) == 1
    assert target.read_text() == "x = 1" + "1" * 10 + "\n"  # every round was valid, so the last one is kept
    assert f"{target}: fixes did not converge after 10 of at most 10 rounds" in capsys.readouterr().err
