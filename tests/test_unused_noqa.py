"""TSL904 unused-suppression: which codes are judged, the fix, and stability across selections
and `--jobs`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.fixer import fix_source
from torchsync_lint.rules._cases import LOOP_BODY_LINE, in_loop

ROOT = Path(__file__).resolve().parent.parent


def unused(src: str, codes: set[str] | None = None, noqa: bool = True, settings: dict | None = None) -> list[tuple[int, str]]:
    return [(f.line, f.message) for f in lint_source(src, "s.py", codes, settings, noqa=noqa) if f.code == "TSL904"]


def test_on_by_default_for_a_stale_code():
    (found,) = unused(in_loop("kept = loss.detach()  # noqa: TSL101"))
    assert found[0] == LOOP_BODY_LINE and "`TSL101` silences nothing" in found[1]
    assert unused(in_loop("kept = loss.item()  # noqa: TSL101")) == []  # near miss: it silences one


def test_a_deselected_or_ignored_code_is_not_judged():
    src = in_loop("kept = loss.detach()  # noqa: TSL101")
    assert unused(src, {"TSL102", "TSL904"}) == []  # TSL101 did not run: it may be used elsewhere
    assert len(unused(src, {"TSL101", "TSL904"})) == 1
    assert unused(src, {"TSL101"}) == []  # TSL904 itself deselected


def test_a_crashed_rule_is_not_judged(monkeypatch):
    from torchsync_lint.rules.host_sync import HostReadInLoop

    def boom(self, node):
        raise RuntimeError("boom")

    monkeypatch.setattr(HostReadInLoop, "visit_Call", boom)
    found = lint_source(in_loop("kept = loss.item()  # noqa: TSL101"), "s.py", {"TSL101", "TSL904"})
    assert "TSL903" in {f.code for f in found} and "TSL904" not in {f.code for f in found}


def test_tsl203_is_judged_only_with_a_configured_version():
    from torchsync_lint.rules._metric_cases import metric_case

    src = metric_case("avg = MeanMetric().to(device)", "avg.update(loss.detach(), weight=w)  # noqa: TSL203")
    assert unused(src, {"TSL203", "TSL904"}) == []  # the installed version (or none) decides: not judged
    assert len(unused(src, {"TSL203", "TSL904"}, settings={"torchmetrics-version": "1.4.0"})) == 1


def test_other_tools_codes_and_blanket_comments_are_left_alone():
    for comment in ("# noqa", "# noqa: E501", "# torchsync: ignore", "# type: ignore[attr-defined]"):
        assert unused(in_loop(f"kept = loss.detach()  {comment}")) == [], comment


def test_flake8_mode_judges_only_our_own_spelling():
    assert unused(in_loop("kept = loss.detach()  # noqa: TSL101"), noqa=False) == []  # flake8's noqa
    assert len(unused(in_loop("kept = loss.detach()  # torchsync: ignore[TSL101]"), noqa=False)) == 1


def test_file_exemption_of_tsl904_and_a_line_noqa_for_it():
    assert unused("# torchsync-lint: noqa: TSL904\n" + in_loop("kept = loss.detach()  # noqa: TSL101")) == []
    assert unused(in_loop("kept = loss.detach()  # noqa: TSL101 # torchsync: ignore[TSL904]")) == []


def _fixed(src: str) -> str:
    result = fix_source(src, "s.py", unsafe=False, suggestions=False, lint=lambda text: lint_source(text, "s.py"))
    assert result.converged and not result.refused
    return result.new_source


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("kept = loss.detach()  # noqa: TSL101", "kept = loss.detach()"),
        ("kept = loss.detach()  # noqa: E501,TSL101", "kept = loss.detach()  # noqa: E501"),
        ("kept = loss.detach()  # NOQA:TSL101, E501", "kept = loss.detach()  # NOQA:E501"),
        ("total += loss.item()  # noqa: TSL101, TSL102", "total += loss.item()  # noqa: TSL101"),
        ("kept = loss.detach()  # why: x  # noqa: TSL101", "kept = loss.detach()  # why: x"),
        ("kept = loss.detach()  # torchsync: ignore[TSL102]  (kept for later)", "kept = loss.detach()  # (kept for later)"),
        ("kept = (  # noqa: TSL101\n    loss.detach()\n)", "kept = (\n    loss.detach()\n)"),
        ("kept = (\n    # noqa: TSL101\n    loss.detach()\n)", "kept = (\n    loss.detach()\n)"),  # an own-line comment goes with its line
    ],
)
def test_fix_removes_only_the_unused_codes(before, after):
    assert _fixed(in_loop(before)) == in_loop(after)


def test_fix_keeps_crlf_and_a_last_line_without_newline():
    src = in_loop("kept = loss.detach()  # noqa: TSL101").replace("\n", "\r\n")
    assert _fixed(src) == in_loop("kept = loss.detach()").replace("\n", "\r\n")
    src = in_loop("kept = loss.detach()  # noqa: TSL101").rstrip("\n")
    assert _fixed(src) == in_loop("kept = loss.detach()").rstrip("\n")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TORCHSYNC_JOBS": "1"}
    return subprocess.run([sys.executable, "-m", "torchsync_lint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_same_findings_across_jobs_and_fixed_by_check_fix(tmp_path):
    for i in range(18):  # 16 or more files: --jobs 2 runs worker processes
        body = "kept = loss.detach()  # noqa: TSL101, E501" if i % 2 else "total += loss.item()  # noqa: TSL101"
        (tmp_path / f"m{i:02}.py").write_text(in_loop(body), encoding="utf-8")
    runs = []
    for jobs in ("1", "2"):
        out = _cli("check", ".", "--format", "json", "--no-cache", "--isolated", "--jobs", jobs, cwd=tmp_path)
        runs.append(sorted((d["path"], d["line"], d["code"]) for d in json.loads(out.stdout)))
    assert runs[0] == runs[1] and len(runs[0]) == 9 and {c for _, _, c in runs[0]} == {"TSL904"}
    out = _cli("check", ".", "--isolated", "--no-cache", "--ignore", "TSL101", cwd=tmp_path)
    assert "TSL904" not in out.stdout and out.returncode == 0  # ignored: the codes are not judged
    out = _cli("check", ".", "--isolated", "--no-cache", "--fix", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "m01.py").read_text(encoding="utf-8") == in_loop("kept = loss.detach()  # noqa: E501")
    assert (tmp_path / "m00.py").read_text(encoding="utf-8") == in_loop("total += loss.item()  # noqa: TSL101")
