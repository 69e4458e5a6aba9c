"""`check --add-noqa` (issue 15: no way to adopt the linter on a large existing repository)."""

from __future__ import annotations

import ast
import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from torchsync_lint.add_noqa import add_noqa
from torchsync_lint.api import lint_text
from torchsync_lint.cli import main

HAZARDS = Path(__file__).parent / "data" / "hazards.py"
HEAD = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x in loader:
    loss = model(x.to(device, non_blocking=True)).sum()
    loss.backward()
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def noqa_added(body: str) -> str:
    """HEAD + body with directives for every finding; asserts they all took hold."""
    src = HEAD + body
    findings = lint_text(src, "t.py")
    assert findings, "the case must have findings"
    new, count = add_noqa(src, findings)
    assert count > 0
    ast.parse(new)
    # every finding is silenced where the directive went (a stale code of the case's own, such as
    # `ignore[TSL102]` on a TSL101 line, stays TSL904: --fix removes it, --add-noqa does not keep it)
    assert [f for f in lint_text(new, "t.py") if f.code != "TSL904"] == []
    assert add_noqa(new, lint_text(new, "t.py")) == (new, 0)  # idempotent
    return new[len(HEAD):]


def test_directive_goes_on_the_reported_line():
    assert noqa_added("    total = loss.item()\n") == "    total = loss.item()  # noqa: TSL101\n"


def test_existing_noqa_codes_are_merged_and_other_comments_kept():
    assert noqa_added("    total = loss.item()  # noqa: E501\n") == "    total = loss.item()  # noqa: E501, TSL101\n"
    assert noqa_added("    total = loss.item()  # noqa:E501,W291\n") == "    total = loss.item()  # noqa:E501,W291, TSL101\n"
    assert noqa_added("    total = loss.item()  # read it for the log\n") == "    total = loss.item()  # read it for the log  # noqa: TSL101\n"
    assert noqa_added("    t = loss.item()  # torchsync: ignore[TSL102]\n") == "    t = loss.item()  # torchsync: ignore[TSL102]  # noqa: TSL101\n"


def test_several_findings_on_a_line_share_one_directive():
    assert noqa_added("    print(loss.item(), float(loss))\n") == "    print(loss.item(), float(loss))  # noqa: TSL101\n"
    assert noqa_added("    if loss.item() > 0 and torch.isnan(loss): pass\n").endswith("  # noqa: TSL101, TSL102\n")


def test_multi_line_string_is_never_broken():
    # `loss.item()` is reported on a line that ends inside a string: the directive goes on the
    # statement's last line, where a comment is possible and suppression still reads it.
    body = '    log(loss.item(), """step\ndone""")\n'
    assert noqa_added(body) == '    log(loss.item(), """step\ndone""")  # noqa: TSL101\n'
    body = "    s = loss.item() + \\\n        1\n"
    assert noqa_added(body) == "    s = loss.item() + \\\n        1  # noqa: TSL101\n"


def test_covered_lines_are_left_alone():
    src = HEAD + "    total = loss.item()  # noqa\n"
    finding = lint_text(HEAD + "    total = loss.item()\n", "t.py")
    assert add_noqa(src, finding) == (src, 0)  # a bare noqa covers everything
    src = HEAD + "    total = loss.item()  # noqa: TSL1\n"
    assert add_noqa(src, finding) == (src, 0)  # a prefix covers the family


def test_cli_adds_reports_and_is_idempotent(tmp_path):
    target = tmp_path / "train.py"
    shutil.copy(HAZARDS, target)
    before = lint_text(target.read_text(encoding="utf-8"), str(target))
    assert before
    code, out, err = run("check", "--isolated", "--add-noqa", str(target))
    lines = {f.line for f in before}
    assert code == 0 and f"Added {len(lines)} noqa directives in 1 file." in err
    code, out, _ = run("check", "--isolated", str(target))
    assert code == 0 and "Found 0 findings" in out
    text = target.read_text(encoding="utf-8")
    code, _, err = run("check", "--isolated", "--add-noqa", str(target))
    assert code == 0 and "Added 0 noqa directives in 0 files." in err and target.read_text(encoding="utf-8") == text
    # The adoption path: new code after the run fails CI again.
    target.write_text(text + "for x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    print(loss.item())\n", encoding="utf-8")
    assert run("check", "--isolated", str(target))[0] == 1


def test_cli_on_a_notebook_edits_only_the_source_lines(tmp_path):
    from test_notebooks import MODEL, SETUP, TRAIN, changed_lines, notebook

    original = notebook(SETUP, MODEL, TRAIN)
    path = tmp_path / "train.ipynb"
    path.write_text(original, encoding="utf-8")
    code, _, err = run("check", "--isolated", "--add-noqa", str(path))
    assert code == 0 and "Added 2 noqa directives in 1 file." in err
    new = path.read_text(encoding="utf-8")
    assert changed_lines(original, new) == [
        ('    "    x, y = x.to(device), y.to(device)\\n",\n', '    "    x, y = x.to(device), y.to(device)  # noqa: TSL301\\n",\n'),
        ('    "    losses.append(loss.item())"\n', '    "    losses.append(loss.item())  # noqa: TSL101"\n'),
    ]
    assert json.loads(new)["cells"][1]["outputs"] == json.loads(original)["cells"][1]["outputs"]
    assert run("check", "--isolated", str(path))[0] == 0


def test_cli_rejects_combinations_and_stdin(tmp_path):
    target = tmp_path / "t.py"
    target.write_text(HEAD)
    assert run("check", "--add-noqa", "--fix", str(target))[0] == 2
    assert run("check", "--add-noqa", "--show-suggestions", str(target))[0] == 2
    code, _, err = run("check", "--add-noqa", "-")
    assert code == 2 and "stdin" in err


def test_file_that_does_not_parse_is_reported_and_untouched(tmp_path):
    target = tmp_path / "t.py"
    target.write_text(HEAD + "    total = loss.item(\n")
    code, _, err = run("check", "--isolated", "--add-noqa", str(target))
    assert code == 2 and "TSL900" in err and target.read_text() == HEAD + "    total = loss.item(\n"


@pytest.mark.parametrize("newline", ["\r\n"])
def test_crlf_file_keeps_its_line_endings(tmp_path, newline):
    target = tmp_path / "t.py"
    target.write_bytes((HEAD + "    total = loss.item()\n").replace("\n", newline).encode())
    assert run("check", "--isolated", "--add-noqa", str(target))[0] == 0
    assert target.read_bytes().endswith(b"    total = loss.item()  # noqa: TSL101\r\n")
    assert b"\n" not in target.read_bytes().replace(b"\r\n", b"")
