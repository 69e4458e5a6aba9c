"""Generated docs (docs/rules.md, the README rule table) and the `rules` / `explain` commands."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from torchsync_lint import docs
from torchsync_lint.cli import main
from torchsync_lint.config import KNOWN_KEYS, load_config, tomllib
from torchsync_lint.reporters import load_formats
from torchsync_lint.rule import load_rules
from torchsync_lint.types import Applicability, Invalid

ROOT = Path(__file__).resolve().parent.parent
RULES = load_rules()


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- drift ---------------------------------------------------------------------------------
def test_readme_and_rule_reference_match_the_registry(capsys):
    code = docs.main(["--check"])
    _, err = capsys.readouterr()
    assert code == 0, f"generated docs are stale: {err.strip()} (run `python -m torchsync_lint.docs`)"


def test_check_detects_drift_and_regeneration_fixes_it(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copy(ROOT / "docs" / "rules.md", tmp_path / "docs" / "rules.md")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text().replace("| [TSL101]", "| [TSL999]"))
    (tmp_path / "docs" / "rules.md").unlink()
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "README.md is out of date" in err and "rules.md is out of date" in err
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
    assert readme.read_text() == (ROOT / "README.md").read_text()


def test_missing_markers_is_an_error():
    with pytest.raises(ValueError, match="rules-table"):
        docs.replace_table("# no markers here\n", "| table |")


# -- content -------------------------------------------------------------------------------
def _github_slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_rule_reference_has_an_anchored_section_per_rule():
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == list(RULES)
    for code, rule in RULES.items():
        anchor = rule.docs_url().rsplit("#", 1)[1]
        assert rule.docs_url().split("#")[0].endswith("docs/rules.md")
        assert _github_slug(code) == anchor
        section = text.split(f"\n## {code}\n", 1)[1].split("\n## ", 1)[0]
        for title in ("What it does", "Why is this bad?", "Example", "Use instead"):
            assert f"### {title}" in section, (code, title)
        if rule.fix_title:
            assert "### Fix safety" in section and rule.fix_title in section
        assert f"`{rule.name}`" in section


def test_readme_table_lists_every_rule_once():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split(docs.TABLE_START, 1)[1].split(docs.TABLE_END, 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| [TSL")]
    assert [re.match(r"\| \[(TSL\d+)\]", row).group(1) for row in rows] == list(RULES)
    for row, rule in zip(rows, RULES.values()):
        assert f"`{rule.name}`" in row and f"(docs/rules.md#{rule.code.lower()})" in row


def test_readme_documents_every_config_key_format_and_integration(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    config_section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    example = config_section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "pyproject.toml").write_text(example)
    config = load_config(tmp_path / "pyproject.toml")  # the example is a valid config ...
    assert set(tomllib.loads(example)["tool"]["torchsync-lint"]) == KNOWN_KEYS  # ... showing every key
    assert config.per_file_ignores and config.torchmetrics_version
    for fmt in load_formats():
        assert f"`{fmt}`" in readme, fmt
    for heading in ("## Usage", "## Suppression", "## For ruff users", "## flake8", "## pre-commit", "## CI", "## Rules"):
        assert heading in readme
    assert 'external = ["TSL"]' in readme
    assert readme.startswith("# torchsync-lint") and "## Set-up (two commands, from a fresh clone)" in readme


def test_readme_pre_commit_rev_exists():
    """The snippet's `rev` must be a tag this repository has or, while none is tagged, a
    placeholder that `pre-commit autoupdate` replaces (never a tag that does not exist)."""
    import subprocess

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("## pre-commit", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    line = next(line for line in snippet.splitlines() if line.strip().startswith("rev:"))
    rev = line.split("rev:", 1)[1].split("#", 1)[0].strip()
    proc = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    tags = proc.stdout.split()
    assert rev in tags or (not tags and rev == "<commit-sha>" and "`pre-commit autoupdate` fills it in" in line), (rev, tags)


# -- fix availability ----------------------------------------------------------------------
def _fake(fix_title, cases=(), safety_text=""):
    return SimpleNamespace(fix_title=fix_title, INVALID=list(cases), section=lambda title: safety_text)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (_fake(None), "-"),
        (_fake("Add it", [Invalid("x", expected_fix="y")]), "safe"),
        (_fake("Add it", [Invalid("x", expected_fix="y", applicability=Applicability.UNSAFE)]), "unsafe"),
        (_fake("Add it", [
            Invalid("x", expected_fix="y", applicability=Applicability.UNSAFE),
            Invalid("x", expected_fix="y", applicability=Applicability.SAFE),
            Invalid("x"),  # no fix pinned: does not count
        ]), "safe/unsafe"),
        (_fake("Add it", [Invalid("x")], "This fix is unsafe: it changes results."), "unsafe"),
        (_fake("Add it", [], "Always safe. Nothing unsafe about it."), "safe"),
    ],
)
def test_fix_availability_comes_from_the_rule_cases(rule, expected):
    assert docs.fix_availability(rule) == expected


def test_message_template_hides_placeholders():
    assert docs.message_template(SimpleNamespace(message="`{expr}` syncs on {what_it_is}")) == "`…` syncs on …"


# -- CLI: rules and explain ----------------------------------------------------------------
def test_rules_text_lists_every_rule_with_fix_availability(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["code", "name", "fix"]
    for rule in RULES.values():
        (line,) = [line for line in lines if line.startswith(rule.code + " ")]
        assert line.split()[1] == rule.name and line.split()[2] == docs.fix_availability(rule)
        assert ("(off by default)" in line) is (not rule.default_enabled)


def test_rules_json_and_markdown(capsys):
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [r["code"] for r in data] == list(RULES)
    for item, rule in zip(data, RULES.values()):
        assert item["name"] == rule.name and item["url"] == rule.docs_url() and item["explanation"] == rule.docs()
        assert item["fixable"] is bool(rule.fix_title)
        assert item["fix_applicability"] == (docs.fix_availability(rule) if rule.fix_title else None)
        assert item["default_enabled"] is rule.default_enabled and item["family"] == rule.__module__.rsplit(".", 1)[1]
    code, out, _ = run(capsys, "rules", "--format", "markdown")
    assert code == 0 and out.strip() == docs.readme_table(RULES)


@pytest.mark.parametrize("code", list(RULES))
def test_explain_prints_the_full_docs_of_every_rule(capsys, code):
    rule = RULES[code]
    status, out, _ = run(capsys, "explain", code)
    assert status == 0
    assert out.startswith(f"# {code} {rule.name}\n")
    assert rule.docs() in out and docs.message_template(rule) in out and rule.docs_url() in out
    for heading in re.findall(r"^## .+$", rule.docs(), flags=re.M):
        assert heading in out
    assert run(capsys, "explain", rule.name)[1] == out  # by name too
    assert run(capsys, "explain", code.lower())[1] == out


def test_explain_unknown_rule_is_a_usage_error(capsys):
    status, out, err = run(capsys, "explain", "TSL999")
    assert status == 2 and out == "" and "no rule" in err


def test_rule_summaries_fit_one_listing_line():
    """`torchsync-lint rules` and the README table show the first paragraph of 'What it
    does'; the detail belongs in the paragraphs after it (shown by `explain`)."""
    from torchsync_lint.rule import load_rules

    long = {code: len(rule.summary()) for code, rule in load_rules().items() if len(rule.summary()) > 210}
    assert long == {}
    assert all(rule.summary().startswith("Flags ") for rule in load_rules().values())
