"""Values that live on objects (issue 21): tests/data/objects_project (from shared/repro) gives
exactly the findings its EXPECTED.md lists, whole-tree and file by file.

EXPECTED.md has three tables: rows that must be reported (once each; "also accepted" names other
lines or codes that count for the same row), rows that count neither way, and look-alikes that
must stay silent. "Exactly" means: every required row is matched by exactly one finding, and no
finding falls outside the required and either-way rows (the silent rows are then implied; they
are checked on their own too, so a failure says which look-alike spoke).
"""

from __future__ import annotations

import collections
import json
import re
import shutil
from pathlib import Path

import pytest

from torchsync_lint.cli import main

PROJECT = Path(__file__).parent / "data" / "objects_project"
PACKAGE = "src/op"
_IGNORE = shutil.ignore_patterns(".torchsync_cache", "__pycache__")
_WHERE = re.compile(r"(\w+\.py):(\d+)")


def _tables() -> tuple[list[set], set, list[tuple[str, int | None, str]]]:
    """(required rows as sets of accepted (path, line, code), either-way (path, line, code),
    silent rows as (path, line or None for "any line", code or "any"))."""
    required, either, silent = [], set(), []
    section = None
    for line in (PROJECT / "EXPECTED.md").read_text().splitlines():
        if line.startswith("| where"):
            section = {None: "required", "required": "either", "either": "silent"}[section]
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2 or set(cells[0]) <= set("-") or section is None:
            continue
        where = _WHERE.fullmatch(cells[0])
        if section == "required":
            code = cells[1]
            alternatives = {(f"{PACKAGE}/{where.group(1)}", int(where.group(2)), code)}
            for other in (a.strip() for a in cells[2].split(",") if a.strip()):
                m = _WHERE.fullmatch(other)
                if m:
                    alternatives.add((f"{PACKAGE}/{m.group(1)}", int(m.group(2)), code))
                else:
                    alternatives.add((f"{PACKAGE}/{where.group(1)}", int(where.group(2)), other))
            required.append(alternatives)
        elif section == "either":
            either.add((f"{PACKAGE}/{where.group(1)}", int(where.group(2)), cells[1]))
        else:
            path = f"{PACKAGE}/{where.group(1)}" if where else f"{PACKAGE}/{cells[0]}"
            silent.append((path, int(where.group(2)) if where else None, cells[1]))
    return required, either, silent


def _findings(capsys, *argv) -> collections.Counter:
    code = main(["check", "--format", "json", "--no-cache", *argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return collections.Counter((r["path"].removeprefix("./"), r["line"], r["code"]) for r in json.loads(out) if r["severity"] != "error")


def _problems(found: collections.Counter) -> list[str]:
    required, either, silent = _tables()
    problems = []
    for alternatives in required:
        hits = sum(found[a] for a in alternatives)
        if hits != 1:
            problems.append(f"{hits} findings for {sorted(alternatives)}")
    allowed = set().union(*required) | either
    problems += [f"unexpected {f}" for f in sorted(found) if f not in allowed]
    for path, line, code in silent:
        spoke = [f for f in found if f[0] == path and (line is None or f[1] == line) and (code == "any" or f[2] == code)]
        problems += [f"look-alike flagged: {f}" for f in spoke]
    return problems


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    target = tmp_path / "objects_project"
    shutil.copytree(PROJECT, target, ignore=_IGNORE)
    monkeypatch.chdir(target)
    return target


def test_the_expected_table_is_read():
    required, either, silent = _tables()
    assert (len(required), len(either), len(silent)) == (18, 2, 4)


def test_objects_project_gives_exactly_the_expected_table(project, capsys):
    assert _problems(_findings(capsys, "src/")) == []


def test_each_file_alone_gives_the_same_findings_as_the_tree(project, capsys):
    whole = _findings(capsys, "src/")
    for path in sorted((project / PACKAGE).glob("*.py")):
        rel = path.relative_to(project).as_posix()
        alone = _findings(capsys, rel)
        assert alone == collections.Counter({k: v for k, v in whole.items() if k[0] == rel}), rel
