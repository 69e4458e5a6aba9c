"""One answer in every entry point (issue 22): each reproducer of repro/entry_points gives what
its README expects; the projects are copied from tests/data/entry_points into tmp dirs.

The whole-project comparisons (every entry point, cache, -j, order, names) are in
tests/test_one_answer.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.cli import main

DATA = Path(__file__).parent / "data" / "entry_points"
ROOT = Path(__file__).resolve().parent.parent


def copy(tmp_path: Path, case: str, part: str = "project") -> Path:
    target = tmp_path / case
    shutil.copytree(DATA / case / part, target, ignore=shutil.ignore_patterns(".torchsync_cache", "__pycache__"))
    return target


def check(capsys, *argv) -> tuple[int, list[tuple]]:
    """(exit code, sorted (path, line, column, code)) of `check --format json`."""
    code = main(["check", "--format", "json", *argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, sorted((r["path"].removeprefix("./"), r["line"], r["column"], r["code"]) for r in json.loads(out) if r["severity"] != "error")


def cli(*argv, cwd: Path, timeout: int = 300, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHSYNC_JOBS",)}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, timeout=timeout, input=stdin)


HELPER_ITEM = ("utils.py", 5, 12, "TSL101")


# -- --add-noqa, --fix, --diff, flake8, verify -----------------------------------------------------

def test_add_noqa_silences_what_needs_another_module(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "helper-item")
    monkeypatch.chdir(root)
    code, before = check(capsys, "--no-cache", ".")
    assert code == 1 and HELPER_ITEM in before and len(before) == 2
    assert main(["check", "--add-noqa", "."]) == 0
    assert "Added 2 noqa directives in 2 files." in capsys.readouterr().err
    assert "noqa: TSL101" in (root / "utils.py").read_text()
    assert check(capsys, "--no-cache", ".") == (0, [])
    texts = {p: p.read_text() for p in root.glob("*.py")}
    assert main(["check", "--add-noqa", "."]) == 0
    assert "Added 0 noqa directives in 0 files." in capsys.readouterr().err
    assert {p: p.read_text() for p in root.glob("*.py")} == texts


def test_fix_and_diff_apply_what_check_calls_fixable(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "fix-ignores-project-view")
    monkeypatch.chdir(root)
    assert main(["check", "--no-cache", "."]) == 1
    assert "1 fixable with `--fix`" in capsys.readouterr().out
    assert main(["check", "--diff", "--no-cache", "."]) == 1
    out, err = capsys.readouterr()
    assert "+    return DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=torch.cuda.is_available())" in out
    assert "Would fix 1 finding (TSL302: 1) in 1 file." in err
    patched = tmp_path / "patched"
    shutil.copytree(root, patched)
    assert subprocess.run(["patch", "-p0", "-s"], cwd=patched, input=out.encode(), capture_output=True).returncode == 0
    assert main(["check", "--fix", "--no-cache", "."]) == 0
    assert "Fixed 1 finding (TSL302: 1) in 1 file." in capsys.readouterr().out
    assert (root / "data.py").read_text() == (patched / "data.py").read_text()
    assert check(capsys, "--no-cache", ".") == (0, [])


def test_fix_from_stdin_is_fixed_in_its_project(tmp_path, monkeypatch, capsys):
    """The fix hook of an editor: stdin stands for data.py in its project."""
    import io

    root = copy(tmp_path, "fix-ignores-project-view")
    monkeypatch.chdir(root)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((root / "data.py").read_bytes())))
    assert main(["check", "--fix", "--stdin-filename", "data.py", "-"]) == 0
    assert "pin_memory=torch.cuda.is_available()" in capsys.readouterr().out


flake8 = pytest.importorskip("flake8")


def test_flake8_gives_the_findings_of_check(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "helper-item")
    monkeypatch.chdir(root)
    _, expected = check(capsys, "--no-cache", ".")
    assert HELPER_ITEM in expected
    proc = cli("-m", "flake8", "--select", "TSL", ".", cwd=root)
    assert proc.returncode == 1, proc.stderr
    got = []
    for line in proc.stdout.decode().splitlines():
        path, row, col, rest = line.split(":", 3)
        got.append((path.removeprefix("./"), int(row), int(col), rest.split()[0]))
    assert sorted(got) == expected


def test_verify_matches_a_helper_sync_to_the_project_finding(tmp_path):
    pytest.importorskip("torch")
    root = copy(tmp_path, "verify-ignores-project-view")
    proc = cli("-m", "torchsync_lint", "verify", "train.py", "--steps", "3", "--backend", "emulate", "--format", "json", cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    entries = json.loads(proc.stdout)
    entries = entries["entries"] if isinstance(entries, dict) else entries
    # reported where check reports it (the helper's line), observed at the script's call
    item = [e for e in entries if e.get("code") == "TSL101"]
    assert [(e["path"].rsplit("/", 1)[-1], e["line"], e["status"], e["failed"], e["observed_at"]) for e in item] == [("utils.py", 5, "confirmed", False, ["train.py:16"])]
    assert not any(e["failed"] for e in entries)


# -- the analysis order ---------------------------------------------------------------------------

@pytest.mark.parametrize("rename", [None, ("helpers.py", "utils.py"), ("train.py", "a_train.py"), ("engine.py", "zz_engine.py")])
def test_a_helper_chain_is_reported_whatever_the_names(rename, tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "order-dependent-helper-chain")
    helper = "helpers.py"
    if rename is not None:
        old, new = rename
        (root / old).rename(root / new)
        for py in root.glob("*.py"):
            py.write_text(py.read_text().replace(f"from {old[:-3]} import", f"from {new[:-3]} import"))
        helper = new if old == "helpers.py" else helper
    monkeypatch.chdir(root)
    assert check(capsys, "--no-cache", ".") == (1, [(helper, 4, 12, "TSL101")])


# -- the cache ------------------------------------------------------------------------------------

def test_cached_equals_uncached_and_one_file_equals_the_whole_tree(tmp_path, monkeypatch, capsys):
    """data.py's loader feeds a GPU when the modules it is connected to use one: an edit of a
    module it is not connected to changes nothing for it, cached or not, alone or not."""
    root = copy(tmp_path, "cache-stale-unrelated-module")
    monkeypatch.chdir(root)
    check(capsys, ".")
    gpu = root / "gpu.py"
    gpu.write_text(gpu.read_text().replace("x = torch.zeros(3)", "x = torch.zeros(3).cuda()"))
    cached, uncached = check(capsys, "."), check(capsys, "--no-cache", ".")
    assert cached == uncached
    assert [f for f in uncached[1] if f[0] == "data.py"] == check(capsys, "--no-cache", "data.py")[1]
    # the same edit in a module data.py is connected to does reach it, through the cache
    util = root / "util.py"
    util.write_text(util.read_text() + "\nimport torch\nw = torch.zeros(1).cuda()\n")
    cached = check(capsys, ".")
    assert [f for f in cached[1] if f[0] == "data.py"] == [("data.py", 7, 14, "TSL302"), ("data.py", 7, 14, "TSL303")]
    assert cached == check(capsys, "--no-cache", ".")
    assert check(capsys, "data.py") == check(capsys, "--no-cache", "data.py") == (1, [f for f in cached[1] if f[0] == "data.py"])


def test_no_cut_off_in_a_large_project(tmp_path, monkeypatch, capsys):
    """450 modules around h.py: an edit two importers away still reaches its cached result."""
    root = tmp_path / "p"
    subprocess.run([sys.executable, str(DATA / "cache-stale-large-project" / "make_project.py"), str(root)], check=True)
    monkeypatch.chdir(root)
    assert check(capsys, ".")[1] == [("h.py", 4, 5, "TSL104")]
    train = root / "train.py"
    train.write_text(train.read_text().replace("\n    step()\n", "\n    pass\nstep()\n"))
    assert check(capsys, ".") == check(capsys, "--no-cache", ".") == (0, [])


def test_an_edit_is_seen_whatever_the_timestamps(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "cache-graph-keyed-by-mtime")
    monkeypatch.chdir(root)
    check(capsys, ".")
    train = root / "train.py"
    st = train.stat()
    text = train.read_text().replace("from utils import", "from utilz import")
    assert len(text) == st.st_size
    train.write_text(text)
    os.utime(train, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    cached = check(capsys, ".")
    assert cached == check(capsys, "--no-cache", ".")
    assert ("utilz.py", 4, 12, "TSL101") in cached[1]


BAD_ENTRIES = ['{"train.py": 5}', "{}", "[[]]", "[]", "null", '"x"', "5", "{not json", ""]


@pytest.mark.parametrize("content", BAD_ENTRIES)
def test_a_bad_cache_entry_is_a_miss_and_is_rewritten(content, tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "helper-item")
    monkeypatch.chdir(root)
    expected = check(capsys, "--no-cache", ".")
    assert expected[1] == [("train.py", 6, 10, "TSL302"), HELPER_ITEM]
    check(capsys, ".")
    entries = sorted((root / ".torchsync_cache").rglob("*.json"))
    kinds = {p.parent.parent.name for p in entries}
    # a lint reads the outlines of the modules its answers need (project/demand.py), not the
    # whole import graph: no "graph" entry is written for it
    assert {"outlines", "summaries", "results"} <= kinds
    for entry in entries:
        entry.write_text(content)
    for _ in range(2):
        assert main(["check", "--format", "json", "."]) == 1
        out, err = capsys.readouterr()
        assert "error" not in err and "TSL903" not in out
        assert sorted((r["path"], r["line"], r["column"], r["code"]) for r in json.loads(out)) == expected[1]
    for entry in entries:  # rewritten with what this tool writes
        assert entry.read_bytes().startswith(b"tsl-cache 1 " + entry.stem.encode()), entry


def test_a_well_formed_entry_of_the_wrong_shape_is_a_miss(tmp_path, monkeypatch, capsys):
    """An entry with a valid header whose value has the wrong shape (a writer's bug, an entry
    of another format) is a miss too."""
    import hashlib

    root = copy(tmp_path, "helper-item")
    monkeypatch.chdir(root)
    expected = check(capsys, "--no-cache", ".")
    check(capsys, ".")
    values = {"graph": {"train.py": 5}, "imports": [1], "summaries": {"version": 2}, "results": [[]], "outlines": {"defines": "train"}, "scopes": [["train.py"]], "index": {"train.py": [1, 2]}}
    for entry in (root / ".torchsync_cache").rglob("*.json"):
        body = json.dumps(values[entry.parent.parent.name]).encode()
        entry.write_bytes(b"tsl-cache 1 " + entry.stem.encode() + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert check(capsys, ".") == expected


def test_a_fifo_in_place_of_an_entry_is_a_miss(tmp_path):
    root = copy(tmp_path, "helper-item")
    first = cli("-m", "torchsync_lint", "check", "-q", ".", cwd=root)
    assert first.returncode == 1
    fifos = []
    for entry in (root / ".torchsync_cache").rglob("*.json"):
        entry.unlink()
        os.mkfifo(entry)
        fifos.append(entry)
    assert fifos
    second = cli("-m", "torchsync_lint", "check", "-q", ".", cwd=root, timeout=60)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    assert all(f.is_file() for f in fifos)  # replaced by regular entries


# -- monorepo and imports -------------------------------------------------------------------------

def test_each_file_of_a_monorepo_is_linted_in_its_own_project(tmp_path, monkeypatch, capsys):
    repo = copy(tmp_path, "monorepo-findings-depend-on-other-files", "repo")
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    b_item = ("projB/src/pkgb/helpers.py", 4, 12, "TSL101")
    a_item = ("projA/utils.py", 5, 12, "TSL101")
    b_files = ["projB/src/pkgb/train.py", "projB/src/pkgb/helpers.py"]
    assert b_item in check(capsys, "--no-cache", "--force-exclude", *b_files)[1]
    assert b_item in check(capsys, "--no-cache", "--force-exclude", "projA/train.py", *b_files)[1]
    whole = check(capsys, "--no-cache", ".")[1]
    assert b_item in whole and a_item in whole
    for path in {f[0] for f in whole}:
        assert check(capsys, "--no-cache", path)[1] == [f for f in whole if f[0] == path], path
    # the message names the caller from its own project root
    main(["check", "--no-cache", "--format", "json", "projB/src/pkgb/helpers.py"])
    assert "from src/pkgb/train.py:14" in json.loads(capsys.readouterr().out)[0]["message"]


def test_nothing_outside_a_project_is_read_for_it(tmp_path, monkeypatch, capsys):
    """Linting projA reads no file of projB (and the reverse), and each caches only its own."""
    from torchsync_lint import sources

    repo = copy(tmp_path, "monorepo-findings-depend-on-other-files", "repo")
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    read: list[str] = []
    real = sources.read
    monkeypatch.setattr(sources, "read", lambda path, *a, **k: read.append(os.path.abspath(path)) or real(path, *a, **k))
    check(capsys, "projA/train.py")
    assert read and all(p.startswith(str(repo / "projA") + os.sep) for p in read), read
    read.clear()
    check(capsys, "projB/src/pkgb/train.py")
    assert read and all(p.startswith(str(repo / "projB") + os.sep) for p in read), read
    assert not (repo / ".torchsync_cache").exists()
    assert (repo / "projA" / ".torchsync_cache").is_dir() and (repo / "projB" / ".torchsync_cache").is_dir()


def test_a_relative_import_beyond_the_top_level_package_is_unresolved(tmp_path, monkeypatch, capsys):
    from torchsync_lint import sources

    tree = copy(tmp_path, "relative-import-beyond-root-reads-outside", "tree")
    proj = tree / "proj"
    monkeypatch.chdir(proj)
    read: list[str] = []
    real = sources.read
    monkeypatch.setattr(sources, "read", lambda path, *a, **k: read.append(os.path.abspath(path)) or real(path, *a, **k))
    cached = check(capsys, ".")
    assert all(p.startswith(str(proj) + os.sep) for p in read), read
    assert cached == check(capsys, "--no-cache", ".")
    # the module linted in the project is the module linted alone (the import resolves nowhere)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(proj / "pkg" / "train.py", alone / "train.py")
    assert [(f[1], f[2], f[3]) for f in cached[1]] == [(f[1], f[2], f[3]) for f in check(capsys, "--no-cache", str(alone / "train.py"))[1]]
    for entry in (proj / ".torchsync_cache").rglob("*.json"):
        assert b"../helpers.py" not in entry.read_bytes() and b'"path":"../' not in entry.read_bytes()


def test_a_package_beats_a_module_of_the_same_name(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "package-vs-module-same-name")
    monkeypatch.chdir(root)
    assert check(capsys, "--no-cache", ".") == (1, [("utils/__init__.py", 4, 12, "TSL101")])


@pytest.mark.parametrize("part, helper", [("project", "pkg/b.py"), ("project_named", "pkg/impl.py")])
def test_a_star_reexport_in_a_package_init_is_followed(part, helper, tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "star-reexport-in-package-init", part)
    monkeypatch.chdir(root)
    assert (helper, 4, 12, "TSL101") in check(capsys, "--no-cache", ".")[1]


def test_a_symlinked_module_is_the_module_python_imports(tmp_path, monkeypatch, capsys):
    tree = copy(tmp_path, "symlinked-module-outside-root", "tree")
    proj = tree / "proj"
    monkeypatch.chdir(proj)
    (proj / "utils.py").symlink_to("../shared/utils.py")
    linked = check(capsys, "--no-cache", ".")
    assert HELPER_ITEM in linked[1]
    (proj / "utils.py").unlink()
    shutil.copy(tree / "shared" / "utils.py", proj / "utils.py")
    assert check(capsys, "--no-cache", ".") == linked


# -- notebooks ------------------------------------------------------------------------------------

def test_a_notebook_takes_part_in_the_project_view(tmp_path, monkeypatch, capsys):
    root = copy(tmp_path, "notebook-not-in-project-view")
    monkeypatch.chdir(root)
    code, found = check(capsys, "--no-cache", ".")
    assert HELPER_ITEM in found
    assert check(capsys, "--no-cache", "utils.py")[1] == [HELPER_ITEM]  # alone too
    assert check(capsys, ".") == (code, found)  # and from the cache
    script = tmp_path / "script"
    shutil.copytree(root, script)
    nb = json.loads((script / "train.ipynb").read_text())
    (script / "train.py").write_text("".join(nb["cells"][0]["source"]))
    (script / "train.ipynb").unlink()
    monkeypatch.chdir(script)
    assert [f for f in check(capsys, "--no-cache", ".")[1] if f[0] == "utils.py"] == [HELPER_ITEM]
