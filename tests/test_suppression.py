"""`# noqa` and `# torchsync: ignore[...]`, on any line of a multi-line statement."""

from __future__ import annotations

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.rules._cases import in_loop


def codes(src):
    return [(f.line, f.code) for f in lint_source(src, "s.py")]


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "# noqa: TSL101", "# NOQA:TSL101", "# noqa: E501, TSL101", "# noqa: TSL1", "# torchsync: ignore[TSL101]", "# torchsync: ignore"],
)
def test_comment_suppresses(comment):
    assert codes(in_loop(f"total += loss.item()  {comment}")) == []


@pytest.mark.parametrize(
    ("comment", "unused"),
    [("# noqa: TSL102", ["TSL904"]), ("# torchsync: ignore[TSL103]", ["TSL904"]), ("# noqa: E501", []), ("# no qa", [])],
)
def test_other_codes_do_not_suppress(comment, unused):
    # (a TSL code that silences nothing is itself reported: TSL904; other tools' codes are not)
    assert [c for _, c in codes(in_loop(f"total += loss.item()  {comment}"))] == ["TSL101", *unused]


def test_noqa_inside_a_string_does_not_count():
    assert [c for _, c in codes(in_loop("msg = 'x # noqa' + str(loss.item())"))] == ["TSL101"]


@pytest.mark.parametrize("where", [0, 1, 2])
def test_any_line_of_a_multiline_statement(where):
    lines = ["total += (", "    loss.item()", ")"]
    lines[where] += "  # noqa: TSL101"
    assert codes(in_loop("\n".join(lines))) == []


def test_compound_statement_header_comment():
    src = in_loop("if torch.isnan(loss):  # noqa: TSL102\n    break")
    assert codes(src) == []
    src = in_loop("if torch.isnan(loss):\n    print(loss)  # noqa: TSL103")
    assert [c for _, c in codes(src)] == ["TSL102"]  # a body comment does not cover the header


def test_suppression_is_per_statement():
    src = in_loop("a = loss.item()  # noqa\nb = loss.item()")
    assert [c for _, c in codes(src)] == ["TSL101"]
