"""The project view: findings that need another module of the project (a loader built in
data.py and iterated in engine.py, a metric made in train.py and updated in engine.py, a loss
class called every step from another module), whole-tree and file by file, and the cache."""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from torchsync_lint.cli import main
from torchsync_lint.config import Config
from torchsync_lint.project import session as session_module
from torchsync_lint.project.session import Session

DATA = Path(__file__).parent / "data"
SPLIT = DATA / "split_project"
PROJECTS = DATA / "projects"
_IGNORE = shutil.ignore_patterns(".torchsync_cache", "__pycache__")
_MARKER = re.compile(r"#\s*expect:\s*((?:TSL\d{3}\s*)+)")


def run_json(capsys, *argv) -> list[dict]:
    code = main(["check", "--format", "json", *argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out)


def found(records: list[dict]) -> collections.Counter:
    return collections.Counter((r["path"].removeprefix("./"), r["line"], r["code"]) for r in records if r["severity"] != "error")


def expected_table() -> collections.Counter:
    """split_project/EXPECTED.md: `| data.py:24 | TSL302, TSL303 |`, `| engine.py:40 | TSL301 (x2) |`."""
    rows: collections.Counter = collections.Counter()
    for line in (SPLIT / "EXPECTED.md").read_text().splitlines():
        m = re.match(r"\|\s*(\w+\.py):([\d, ]+)\s*\|\s*([^|]+)\|", line)
        if not m:
            continue
        for number in m.group(2).split(","):
            for code in m.group(3).split(","):
                times = re.search(r"\(x(\d+)\)", code)
                rows[(f"src/proj/{m.group(1)}", int(number), code.split()[0])] += int(times.group(1)) if times else 1
    return rows


def markers(root: Path) -> collections.Counter:
    out: collections.Counter = collections.Counter()
    for path in sorted(root.rglob("*.py")):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            m = _MARKER.search(text)
            if m:
                for code in m.group(1).split():
                    out[(path.relative_to(root).as_posix(), number, code)] += 1
    return out


@pytest.fixture
def split(tmp_path, monkeypatch) -> Path:
    target = tmp_path / "split_project"
    shutil.copytree(SPLIT, target, ignore=_IGNORE)
    monkeypatch.chdir(target)
    return target


def test_split_project_gives_exactly_the_expected_table(split, capsys):
    assert sum(expected_table().values()) == 28  # the table was read
    assert found(run_json(capsys, "--no-cache", "src/")) == expected_table()


def test_each_file_alone_gives_the_same_findings_as_the_whole_tree(split, capsys):
    whole = found(run_json(capsys, "--no-cache", "src/"))
    for path in sorted((split / "src" / "proj").glob("*.py")):
        rel = path.relative_to(split).as_posix()
        alone = found(run_json(capsys, "--no-cache", rel))
        assert alone == collections.Counter({k: v for k, v in whole.items() if k[0] == rel}), rel


def test_cross_module_message_names_the_calling_line(tmp_path, monkeypatch, capsys):
    shutil.copytree(PROJECTS / "loss_callable", tmp_path / "p", ignore=_IGNORE)
    monkeypatch.chdir(tmp_path / "p")
    records = run_json(capsys, "--no-cache", ".")
    assert [r["message"].endswith("(`__call__` is called every step from train.py:8)") for r in records] == [True]


@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_project_findings_equal_their_markers(name, tmp_path, monkeypatch, capsys):
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root, ignore=_IGNORE)
    monkeypatch.chdir(root)
    assert found(run_json(capsys, "--no-cache", ".")) == markers(root)


@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_project_files_alone_keep_their_markers(name, tmp_path, monkeypatch, capsys):
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root, ignore=_IGNORE)
    monkeypatch.chdir(root)
    expected = markers(root)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        assert found(run_json(capsys, "--no-cache", rel)) == collections.Counter({k: v for k, v in expected.items() if k[0] == rel}), rel


def test_a_caller_passing_star_args_leaves_a_parameter_unknown(tmp_path, monkeypatch, capsys):
    """A call site we cannot map (`show(*args)`) makes the parameter unknown: no finding."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "helper.py").write_text("def show(v):\n    print(f'{v}')\n")
    (tmp_path / "a.py").write_text(
        "import torch\nfrom helper import show\n\ndef train(model, loader, opt):\n    for x in loader:\n"
        "        loss = model(x.cuda(non_blocking=True)).sum()\n        loss.backward()\n        opt.step()\n        show(loss)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert found(run_json(capsys, "--no-cache", ".")) == collections.Counter({("helper.py", 2, "TSL103"): 1})
    (tmp_path / "b.py").write_text("from helper import show\n\ndef once(*args):\n    show(*args)\n")
    assert found(run_json(capsys, "--no-cache", ".")) == collections.Counter()


# -- the cache --------------------------------------------------------------------------------------

def test_a_warm_run_gives_what_a_cold_one_gave(split, capsys):
    cold = run_json(capsys, "src/")
    assert (split / ".torchsync_cache").is_dir()
    assert (split / ".torchsync_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    warm = run_json(capsys, "src/")
    assert warm == cold
    assert found(cold) == expected_table()


def test_an_edit_relints_what_depends_on_it(split, capsys):
    run_json(capsys, "src/")
    data = split / "src" / "proj" / "data.py"
    data.write_text(data.read_text().replace("shuffle=train)", "shuffle=train, num_workers=2, pin_memory=True)"))
    after = found(run_json(capsys, "src/"))
    assert ("src/proj/data.py", 24, "TSL302") not in after and ("src/proj/data.py", 24, "TSL303") not in after
    # train.py builds the metrics that engine.py updates: engine.py's findings follow an edit
    # of train.py although engine.py itself did not change.
    train = split / "src" / "proj" / "train.py"
    train.write_text(train.read_text().replace("MulticlassAccuracy(num_classes=10)", 'MulticlassAccuracy(num_classes=10, average="micro")'))
    assert ("src/proj/engine.py", 23, "TSL206") not in found(run_json(capsys, "src/"))
    assert found(run_json(capsys, "--no-cache", "src/")) == found(run_json(capsys, "src/"))


def test_no_cache_writes_nothing_and_a_corrupt_entry_is_a_miss(split, capsys):
    run_json(capsys, "--no-cache", "src/")
    assert not (split / ".torchsync_cache").exists()
    first = run_json(capsys, "src/")
    for entry in (split / ".torchsync_cache").rglob("*.json"):
        entry.write_text("{not json")
    assert run_json(capsys, "src/") == first


def test_no_cache_is_written_outside_a_project(tmp_path, monkeypatch, capsys):
    (tmp_path / "t.py").write_text("import torch\nx = torch.zeros(3)\n")
    monkeypatch.chdir(tmp_path)
    run_json(capsys, "t.py")
    assert not (tmp_path / ".torchsync_cache").exists()


def test_jobs_do_not_change_project_findings(tmp_path, monkeypatch, capsys):
    root = tmp_path / "p"
    shutil.copytree(SPLIT, root, ignore=_IGNORE)
    for i in range(20):  # enough files for worker processes
        (root / "src" / "proj" / f"extra_{i}.py").write_text(f"from proj.engine import evaluate\n\ndef f{i}():\n    return evaluate\n")
    monkeypatch.chdir(root)
    one = run_json(capsys, "--no-cache", "-j", "1", "src/")
    two = run_json(capsys, "--no-cache", "-j", "2", "src/")
    assert one == two and found(one) == expected_table()
    assert os.cpu_count() is not None


def test_the_reason_names_the_remote_caller_when_the_message_is_written(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(DATA / "entry_points" / "helper-item" / "project", root)
    session = Session(root, Config(), use_cache=False)
    (finding,) = session.lint(str(root / "utils.py")).findings
    assert "(`to_scalar` is called every step from train.py:13)" in finding.message


def test_a_remote_caller_line_is_read_only_for_a_finding(tmp_path, monkeypatch):
    """train.py calls both `to_scalar` and `clean` every step; only `to_scalar` reports (its
    `.item()`), so only its caller's line (a position in train.py) is worked out."""
    root = tmp_path / "p"
    shutil.copytree(DATA / "entry_points" / "helper-item" / "project", root)
    session = Session(root, Config(), use_cache=False)
    asked = []
    real = session_module.Session._deferred_field

    def deferred_field(self, rel, sha, kind, key, field):
        asked.append((rel, field))
        return real(self, rel, sha, kind, key, field)

    monkeypatch.setattr(session_module.Session, "_deferred_field", deferred_field)
    (finding,) = session.lint(str(root / "utils.py")).findings
    assert "from train.py:13)" in finding.message
    assert asked.count(("train.py", "hot")) == 2  # both calls were asked whether they run per step
    assert asked.count(("train.py", "line")) == 1
