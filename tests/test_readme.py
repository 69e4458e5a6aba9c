"""The README as a user reads it: a short quick start first, figures that match the pages
they come from, and links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_opens_with_a_quick_start_of_at_most_40_lines():
    headings = re.findall(r"(?m)^## .*$", README)
    assert headings[0] == "## Quick start"
    quick = _section(README, "## Quick start")
    assert len(quick.strip("\n").splitlines()) <= 40
    # install from a git URL (no release is published), `check .`, one real output, pre-commit, the server
    assert "pip install \"torchsync-lint @ git+" in quick and "torchsync-lint check ." in quick
    assert "<!-- sample-output:start -->" in quick and "Found " in quick
    assert "repo: https://github.com/torchsync-lint/torchsync-lint" in quick and "torchsync-lint server" in quick
    # contributor set-up comes last, not first
    assert headings[-1] == "## Set-up (two commands, from a fresh clone)"


def _precision_now() -> tuple[int, int, str, str]:
    page = (ROOT / "docs" / "precision.md").read_text(encoding="utf-8")
    match = re.search(r"### All (\d+) projects, now\n(.*?)\n\n", page, re.S)
    assert match, "docs/precision.md has no 'All N projects, now' table"
    row = next(line for line in match.group(2).splitlines() if line.startswith("| all |"))
    tp, fp, fn, precision, recall = [c.strip().strip("*") for c in row.strip("|").split("|")[1:]]
    return int(match.group(1)), int(tp) + int(fn), precision, recall


def test_the_readme_precision_figures_are_docs_precision_mds():
    projects, hazards, precision, recall = _precision_now()
    text = " ".join(_section(README, "## How precise is it?").split())
    assert f"on {projects} whole projects ({hazards} labelled hazards" in text
    assert f"precision {precision} and recall {recall}" in text


def test_every_relative_link_in_the_readme_and_docs_pages_exists():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans: `HEADS[name](cfg)` is no link
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert missing == []
