"""Lint a fixture and its rewrite the same way, and say which markers the rewrite kept.

A marker (`# expect: TSL101` on a fixture line) is tagged with its original line before the
rewrite (`# expect: TSL101 [@L40]`): comments travel with the statements libcst moves, so the
tag says where the marked statement went (file and line) whatever the rewrite did. A finding
*matches* a marker when it has the marker's code at the tag's line. Both programs are linted
through torchsync_lint.api as projects of their own (a temp directory with a pyproject.toml),
so that a module a rewrite adds is part of the project.
"""

from __future__ import annotations

import collections
import io
import re
import tempfile
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from torchsync_lint.api import lint_paths
from torchsync_lint.config import Config
from torchsync_lint.markers import read_markers_source

from .rewritten import GATED, GONE, KEPT, Rewritten, Source

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
TAG = re.compile(r"\s*\[@L(\d+)\]")


def fixture_paths() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".fixed.py"))


def fixture_id(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def _comments(text: str):
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok


def tag_markers(text: str) -> str:
    """Each marker comment ends with ``[@L<its line>]``."""
    lines = text.splitlines(keepends=True)
    marked = {m.line for m in read_markers_source(text) if m.kind == "expect"}
    for tok in _comments(text):
        row, col = tok.start
        if row in marked and "expect:" in tok.string:
            line = lines[row - 1]
            end = col + len(tok.string)
            lines[row - 1] = line[:end] + f" [@L{row}]" + line[end:]
    return "".join(lines)


def tag_locations(files: dict[str, str]) -> dict[int, list[tuple[str, int]]]:
    """original marker line -> where its tag is now: [(file, line)] (one, for a sound rewrite)."""
    where = collections.defaultdict(list)
    for rel, text in files.items():
        for tok in _comments(text):
            for m in TAG.finditer(tok.string):
                where[int(m.group(1))].append((rel, tok.start[0]))
    return dict(where)


def load(path: Path) -> Source:
    text = path.read_text()
    markers = tuple((m.line, m.code) for m in read_markers_source(text) if m.kind == "expect")
    return Source(tag_markers(text), path.name, markers)


@dataclass(frozen=True)
class Hit:
    file: str
    line: int
    code: str
    message: str
    text: str  # the line's source, stripped, without the tag: how an unexpected finding is named


def lint_files(files: dict[str, str]) -> list[Hit]:
    """The findings of ``files`` linted as one project (sorted)."""
    with tempfile.TemporaryDirectory(prefix="tsl-robust-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
        for rel, text in files.items():
            (root / rel).write_text(text)
        results = lint_paths([str(root)], Config(), jobs=1, use_cache=False)
        hits = []
        for result in results:
            if result.errors:
                raise AssertionError(f"lint errors in a rewritten program: {result.errors}")
            rel = Path(result.path).resolve().relative_to(root.resolve()).as_posix()
            lines = files[rel].splitlines()
            for f in result.findings:
                text = TAG.sub("", lines[f.line - 1]).strip() if f.line <= len(lines) else ""
                hits.append(Hit(rel, f.line, f.code, f.message, text))
    return sorted(hits, key=lambda h: (h.file, h.line, h.code, h.message))


def marker_keys(fixture: str, markers) -> list[tuple[str, int, str]]:
    """``fixture:line:code`` for each marker, ``#2`` ... for a code marked twice on one line."""
    seen = collections.Counter()
    keys = []
    for line, code in markers:
        seen[(line, code)] += 1
        n = seen[(line, code)]
        keys.append((f"{fixture}:{line}:{code}" + (f"#{n}" if n > 1 else ""), line, code))
    return keys


@lru_cache(maxsize=None)
def original(path: Path) -> tuple[Source, tuple[Hit, ...]]:
    src = load(path)
    return src, tuple(lint_files({src.name: src.text}))


@dataclass
class Outcome:
    """One rewrite of one fixture: each marker the original finds, as the rewrite expects it
    (``held``) or not (``broken``), and the rewritten program's findings at no marker."""

    fixture: str
    applicable: bool
    held: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    expectations: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    lost_tags: list[str] = field(default_factory=list)  # markers whose comment the rewrite dropped or duplicated


def _match(hits, loc, code, want) -> bool:
    at = [h for h in hits if (h.file, h.line) == loc and h.code == code]
    if want == GONE:
        return not at
    if want == GATED:
        return any("gated" in h.message.lower() for h in at)
    return bool(at)


def evaluate(path: Path, rewrite) -> Outcome:
    fixture = fixture_id(path)
    src, before = original(path)
    rewritten: Rewritten | None = rewrite(src)
    if rewritten is None:
        return Outcome(fixture, applicable=False)
    after = lint_files(rewritten.files)
    where = tag_locations(rewritten.files)
    out = Outcome(fixture, applicable=True)
    original_hits = collections.Counter((h.line, h.code) for h in before)
    used = collections.Counter()
    for key, line, code in marker_keys(fixture, src.markers):
        used[(line, code)] += 1
        if used[(line, code)] > original_hits[(line, code)]:
            continue  # the original misses it: not code the analysis understands
        locs = where.get(line, [])
        if len(locs) != 1:
            out.lost_tags.append(key)
            out.broken.append(key)
            continue
        want = rewritten.expect.get((line, code), KEPT)
        out.expectations[key] = want
        (out.held if _match(after, locs[0], code, want) else out.broken).append(key)
    # a finding is extra when its (place, code) has more findings than markers moved there
    marked_at = collections.Counter((where[line][0], code) for line, code in src.markers if where.get(line))
    seen = collections.Counter()
    for h in after:
        seen[((h.file, h.line), h.code)] += 1
        if seen[((h.file, h.line), h.code)] > marked_at[((h.file, h.line), h.code)]:
            out.extra.append(f"{fixture}|{h.code}|{h.file}|{h.text}")
    return out
