"""File-level exemptions: `# torchsync-lint: noqa[: CODES]` and `# flake8: noqa[: CODES]`, as
own-line comments anywhere in the file (ruff's reading), in check, flake8 and the server."""

from __future__ import annotations

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.rules._cases import in_loop

BODY = "total += loss.item()\nif torch.isnan(loss):\n    break"  # TSL101 and TSL102


def codes(src: str, noqa: bool = True) -> list[str]:
    return sorted({f.code for f in lint_source(src, "s.py", noqa=noqa)})


def test_the_case_has_both_findings():
    assert codes(in_loop(BODY)) == ["TSL101", "TSL102"]


@pytest.mark.parametrize(
    ("directive", "left"),
    [
        ("# torchsync-lint: noqa", []),
        ("# TORCHSYNC-LINT: NOQA", []),
        ("# torchsync-lint: noqa: TSL101", ["TSL102"]),
        ("# torchsync-lint: noqa: TSL101, TSL102", []),
        ("# torchsync-lint: noqa: TSL1", []),  # a prefix, as in line comments
        ("# torchsync-lint: noqa: TSL2", ["TSL101", "TSL102"]),
        ("# flake8: noqa", []),
        ("# flake8=noqa", []),
        ("# flake8: noqa: TSL102", ["TSL101"]),  # ruff's reading: those codes for the file
        ("# flake8: noqa: E501", ["TSL101", "TSL102"]),
    ],
)
def test_file_directive_at_the_top(directive, left):
    assert codes(directive + "\n" + in_loop(BODY)) == left


def test_an_own_line_directive_anywhere_counts():
    assert codes(in_loop(BODY, after="# torchsync-lint: noqa: TSL101\n")) == ["TSL102"]
    assert codes(in_loop("# flake8: noqa\n" + BODY)) == []  # indented, in the loop body


@pytest.mark.parametrize(
    "near_miss",
    [
        "x = 1  # torchsync-lint: noqa",  # a trailing comment is no file directive
        "x = 1  # flake8: noqa",
        "x = '# torchsync-lint: noqa'",  # in a string
        "# torchsync: noqa",  # not our spelling of the file directive
        "# the flake8: noqa comment is not used here",
    ],
)
def test_near_misses_exempt_nothing(near_miss):
    assert codes(near_miss + "\n" + in_loop(BODY)) == ["TSL101", "TSL102"]


def test_flake8_adapter_leaves_flake8_directives_to_flake8():
    # flake8 skips a `# flake8: noqa` file itself (and warns about the coded form): the engine
    # must not apply it a second time, or `--disable-noqa` would not bring the findings back.
    assert codes("# flake8: noqa\n" + in_loop(BODY), noqa=False) == ["TSL101", "TSL102"]
    assert codes("# flake8: noqa: TSL101\n" + in_loop(BODY), noqa=False) == ["TSL101", "TSL102"]
    assert codes("# torchsync-lint: noqa: TSL101\n" + in_loop(BODY), noqa=False) == ["TSL102"]  # ours


def test_check_and_server_apply_it(tmp_path):
    from torchsync_lint.api import config_for, lint_paths
    from torchsync_lint.server.workspace import Workspace

    path = tmp_path / "train.py"
    path.write_text("# torchsync-lint: noqa: TSL102\n" + in_loop(BODY), encoding="utf-8")
    results = lint_paths([str(path)], config_for([str(path)], None, True), use_cache=False)
    assert [f.code for r in results for f in r.findings] == ["TSL101"]
    ws = Workspace(use_cache=False)
    ws.open(str(path), path.read_text(encoding="utf-8"), 1)
    assert [f.code for f in ws.documents[str(path)].outcome.findings] == ["TSL101"]


def test_flake8_run_applies_each_directive_once(tmp_path):
    pytest.importorskip("flake8")
    from tests.test_flake8 import _flake8, _parse

    for name, head in (("skip.py", "# flake8: noqa"), ("ours.py", "# torchsync-lint: noqa: TSL101")):
        (tmp_path / name).write_text(head + "\n" + in_loop(BODY), encoding="utf-8")
    shown = {(row[0], row[3]) for row in _parse(_flake8("--select", "TSL", "skip.py", "ours.py", cwd=tmp_path).stdout)}
    assert shown == {("ours.py", "TSL102")}  # flake8 skipped skip.py; we exempted TSL101 in ours.py
    shown = {(row[0], row[3]) for row in _parse(_flake8("--select", "TSL", "--disable-noqa", "skip.py", cwd=tmp_path).stdout)}
    assert shown == {("skip.py", "TSL101"), ("skip.py", "TSL102")}  # flake8's directive, flake8's switch
