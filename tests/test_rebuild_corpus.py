"""benchmarks/projects/rebuild.py and benchmarks/rebuild_files.py: corpus trees rebuilt from a
git mirror, on a throwaway repository built here (no third-party code), and the committed
SOURCES.md files parsed as the scripts parse them."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rb():
    yield load("rebuild_projects", ROOT / "benchmarks" / "projects" / "rebuild.py")
    sys.modules.pop("rebuild_projects", None)


@pytest.fixture(scope="module")
def rf():
    yield load("rebuild_files", ROOT / "benchmarks" / "rebuild_files.py")
    sys.modules.pop("rebuild_files", None)


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def mirror(tmp_path):
    """A bare mirror of a two-commit repository; returns (git dir, first commit, second commit)."""
    work = tmp_path / "work"
    (work / "pkg" / "vendored").mkdir(parents=True)
    (work / "train.py").write_text("import torch\nx = 1\n")
    (work / "pkg" / "model.py").write_text("a = 1\nb = 2\nc = 3\n")
    (work / "pkg" / "vendored" / "v.py").write_text("v = 0\n")
    (work / "README.md").write_text("readme\n")
    (work / "pyproject.toml").write_text("[project]\nname = 't'\n")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    first = git(work, "rev-parse", "HEAD")
    (work / "train.py").write_text("changed\n")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")
    second = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare, first, second


SOURCES = """# toy
| field | value |
|---|---|
| repo | https://github.com/someone/toy (upstream) |
| commit | `{commit}` (main) |
| Python files / lines | {counts} |
| removed | `pkg/vendored/` (vendored) |

Rebuild: keep the `*.py` files and `pyproject.toml`, then delete `pkg/vendored/`.
"""


def source(rb, commit, counts="2 files, 5 lines", table=None):
    text = SOURCES.format(commit=commit, counts=counts)
    table = table if table is not None else {"toy": {"extra": ["pyproject.toml"], "remove": ["pkg/vendored/"]}}
    return rb.parse_sources("toy", text, table), text


def test_parses_repo_commit_and_counts_in_both_table_spellings(rb, mirror):
    _, first, _ = mirror
    s, _ = source(rb, first)
    assert (s.repo, s.commit, s.files, s.lines) == ("someone/toy", first, 2, 5)
    s, _ = source(rb, first, counts="7 / 1,302 (after removals)")
    assert (s.files, s.lines) == (7, 1302)
    s, _ = source(rb, first, counts="unknown")
    assert (s.files, s.lines) == (None, None)


def test_extracts_the_listed_commit_keeps_py_and_extras_and_removes(rb, mirror, tmp_path):
    bare, first, _ = mirror
    s, _ = source(rb, first)
    result = rb.build(s, bare, tmp_path / "corpus", write=True)
    tree = tmp_path / "corpus" / "toy"
    assert result["ok"], result["problems"]
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == [
        "pkg/model.py", "pyproject.toml", "train.py"]
    assert (tree / "train.py").read_text() == "import torch\nx = 1\n"  # the first commit, not HEAD


def test_count_mismatch_is_reported(rb, mirror, tmp_path):
    bare, first, _ = mirror
    s, _ = source(rb, first, counts="3 files, 5 lines")
    result = rb.build(s, bare, tmp_path / "corpus", write=False)
    assert not result["ok"] and "states 3 files / 5 lines" in result["problems"][0]


def test_missing_commit_fails_without_substitution(rb, mirror, tmp_path):
    bare, _, _ = mirror
    s, _ = source(rb, "0" * 40)
    result = rb.build(s, bare, tmp_path / "corpus", write=True)
    assert not result["ok"] and "not in the mirror" in result["problems"][0]
    assert not (tmp_path / "corpus" / "toy").exists()


def test_removal_matching_nothing_is_reported(rb, mirror, tmp_path):
    bare, first, _ = mirror
    s, _ = source(rb, first, counts="3 files, 6 lines", table={"toy": {"remove": ["pkg/gone/"]}})
    result = rb.build(s, bare, tmp_path / "corpus", write=False)
    assert any("matches no file" in p for p in result["problems"])


def test_table_entry_not_named_in_sources_is_a_problem(rb, mirror):
    _, first, _ = mirror
    s, text = source(rb, first, table={"toy": {"remove": ["pkg/vendored/", "pkg/model.py"]}})
    assert rb.check_table(s, text) == [
        "toy: 'pkg/model.py' is in rebuild.py's table but not named in SOURCES.md"]
    s, text = source(rb, first)
    assert rb.check_table(s, text) == []


def test_committed_sources_all_parse_and_name_their_table_entries(rb):
    projects = sorted(p.parent.name for p in (ROOT / "benchmarks" / "projects").glob("*/SOURCES.md"))
    assert set(rb.TABLE) <= set(projects)
    for slug in projects:
        text = (ROOT / "benchmarks" / "projects" / slug / "SOURCES.md").read_text(encoding="utf-8")
        s = rb.parse_sources(slug, text)
        assert len(s.commit) == 40 and "/" in s.repo and s.files and s.lines, slug
        assert rb.check_table(s, text) == [], slug


def test_single_file_rows_are_checked_by_lines_and_chars(rf, mirror, tmp_path):
    bare, first, second = mirror
    table = tmp_path / "SOURCES.md"
    table.write_text(
        "| corpus file | repo | path | commit | lines | chars | notes |\n|---|---|---|---|---|---|---|\n"
        f"| toy__train.py | someone/toy | train.py | {first} | 2 | 19 | |\n"
        f"| toy__model.py | someone/toy | pkg/model.py | {second} | 3 | 99 | wrong chars |\n"
        f"| toy__gone.py | someone/toy | train.py | {'1' * 40} | 1 | 8 | |\n")
    out = tmp_path / "out"
    rc = rf.main([str(table), str(out), "--mirror", f"someone/toy={bare}"])
    assert rc == 1
    assert [p.name for p in out.iterdir()] == ["toy__train.py"]
    assert (out / "toy__train.py").read_bytes() == b"import torch\nx = 1\n"


def test_committed_single_file_tables_parse(rf):
    for corpus, n in (("realworld", 13), ("realworld2", 14)):
        rows = rf.rows(ROOT / "benchmarks" / corpus / "SOURCES.md")
        assert len(rows) == n and all(len(r["commit"]) == 40 for r in rows)
