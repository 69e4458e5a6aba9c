"""One project, every entry point, one answer (issue 22, "Done when").

A multi-module project (tests/data/split_project plus 20 small modules that import it, enough
for worker processes) is linted through every entry point; every file must get the same
findings (codes, lines, columns) from each: `check` cold, cached, `-j 1`, `-j 2`, each file
alone, the files in any order, stdin, `--statistics`, `--show-suggestions`, `--diff`,
`--fix`, `--add-noqa`, flake8, the pre-commit hook's command, the training script as a
notebook, and the verifier's matching. Then the analysis order: helper chains whose finding
must not depend on the modules' names, through import cycles, self-imports and long chains.
"""

from __future__ import annotations

import collections
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.cli import main

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent
_IGNORE = shutil.ignore_patterns(".torchsync_cache", "__pycache__")
_LOCATION = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?P<code>TSL\d{3}) ", re.M)


def build(tmp_path: Path, name: str = "p") -> Path:
    root = tmp_path / name
    shutil.copytree(DATA / "split_project", root, ignore=_IGNORE)
    for i in range(20):
        (root / "src" / "proj" / f"extra_{i:02d}.py").write_text(f"from proj.engine import evaluate\n\n\ndef f{i}():\n    return evaluate\n")
    return root


def files_of(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "src").rglob("*.py"))


def per_file(rows) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = collections.defaultdict(list)
    for path, line, col, code in rows:
        out[path.removeprefix("./")].append((line, col, code))
    return {path: sorted(found) for path, found in sorted(out.items())}


def check(capsys, *argv) -> dict[str, list[tuple]]:
    code = main(["check", "--format", "json", *argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return per_file((r["path"], r["line"], r["column"], r["code"]) for r in json.loads(out) if r["severity"] != "error")


def text_locations(text: str) -> dict[str, list[tuple]]:
    return per_file((m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in _LOCATION.finditer(text))


def subprocess_run(*argv, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TORCHSYNC_JOBS", None)
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=stdin is None, input=stdin, timeout=600)


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = build(tmp_path)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def reference(project, capsys):
    ref = check(capsys, "--no-cache", "-j", "1", "src/")
    assert sum(len(v) for v in ref.values()) == 28 and "src/proj/engine.py" in ref and "src/proj/data.py" in ref
    return ref


def test_cache_jobs_and_order_give_one_report(project, reference, capsys):
    assert check(capsys, "-j", "1", "src/") == reference  # cold, filling the cache
    assert check(capsys, "-j", "1", "src/") == reference  # from the cache
    assert check(capsys, "--no-cache", "-j", "2", "src/") == reference
    assert check(capsys, "-j", "2", "src/") == reference
    files = files_of(project)
    assert check(capsys, "--no-cache", "-j", "1", *reversed(files)) == reference
    shuffled = files[:]
    random.Random(22).shuffle(shuffled)
    assert check(capsys, "--no-cache", "-j", "2", *shuffled) == reference
    (project / ".torchsync_cache").rename(project / "old_cache")  # the cache written by -j 2 serves -j 1
    assert check(capsys, "-j", "2", "src/") == reference
    assert check(capsys, "-j", "1", "src/") == reference


def test_each_file_alone_and_from_stdin_gives_its_share(project, reference, capsys, monkeypatch):
    for path in files_of(project)[:9] + ["src/proj/train.py", "src/proj/engine.py", "src/proj/data.py"]:
        expected = {path: reference[path]} if path in reference else {}
        assert check(capsys, "--no-cache", path) == expected, path
        assert check(capsys, path) == expected, path  # cached
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((project / path).read_bytes())))
        assert check(capsys, "--stdin-filename", path, "-") == expected, path


def test_statistics_suggestions_diff_and_fix_agree_with_check(project, reference, capsys):
    assert main(["check", "--format", "json", "--no-cache", "src/"]) == 1
    records = [r for r in json.loads(capsys.readouterr().out) if r["severity"] != "error"]
    main(["check", "--statistics", "--format", "json", "src/"])
    stats = {row["code"]: row["count"] for row in json.loads(capsys.readouterr().out)}
    assert stats == dict(collections.Counter(r["code"] for r in records))
    assert main(["check", "--show-suggestions", "src/"]) == 0
    listed = text_locations(capsys.readouterr().out)
    suggested = per_file((r["path"], r["line"], r["column"], r["code"]) for r in records if r["fix"] and r["fix"]["applicability"] == "suggestion")
    assert listed == suggested and listed
    safe = collections.Counter(r["code"] for r in records if r["fix"] and r["fix"]["applicability"] == "safe")
    assert main(["check", "--diff", "src/"]) == 1
    out, err = capsys.readouterr()
    expected_line = f"Would fix {sum(safe.values())} findings (" + ", ".join(f"{c}: {n}" for c, n in sorted(safe.items())) + ")"
    assert expected_line in err and "src/proj/data.py" in out  # the loader's pin_memory: a finding that needs train.py
    assert main(["check", "--fix", "src/"]) in (0, 1)
    fixed = capsys.readouterr().out
    assert expected_line.replace("Would fix", "Fixed") in fixed
    after = check(capsys, "--no-cache", "src/")
    # a safe fix may also remove another finding on its line (TSL202's `.detach()` takes the TSL101 of the `.item()` with it)
    assert sum(len(v) for v in after.values()) <= sum(len(v) for v in reference.values()) - sum(safe.values())


def test_add_noqa_silences_every_finding_check_reports(project, reference, capsys):
    assert main(["check", "--add-noqa", "src/"]) == 0
    lines = {(path, line) for path, found in reference.items() for line, _, _ in found}
    assert f"Added {len(lines)} noqa directives in {len(reference)} files." in capsys.readouterr().err
    for path, line in lines:
        assert "# noqa: TSL" in (project / path).read_text().splitlines()[line - 1], (path, line)
    assert check(capsys, "--no-cache", "src/") == {}


def test_flake8_and_the_pre_commit_hook_report_what_check_reports(project, reference):
    pytest.importorskip("flake8")
    proc = subprocess_run("-m", "flake8", "--select", "TSL", "src/", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert text_locations(proc.stdout) == reference
    hook = _hook("torchsync-lint")
    files = files_of(project)
    proc = subprocess_run("-m", "torchsync_lint", *hook, *files, cwd=project)  # require_serial: every staged file at once
    assert proc.returncode == 1, proc.stderr
    assert text_locations(proc.stdout) == reference
    for path in ("src/proj/data.py", "src/proj/engine.py"):  # one staged file
        proc = subprocess_run("-m", "torchsync_lint", *hook, path, cwd=project)
        assert text_locations(proc.stdout) == {path: reference[path]}


def _hook(hook_id: str) -> list[str]:
    """The hook's command from .pre-commit-hooks.yaml, without the program name."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    block = text[text.index(f"- id: {hook_id}\n") :]
    entry = re.search(r"^\s*entry: (.+)$", block, re.M).group(1).split()
    args = json.loads(re.search(r"^\s*args: (\[.*\])$", block, re.M).group(1))
    assert entry[0] == "torchsync-lint"
    return [*entry[1:], *args]


def test_the_training_script_as_a_notebook(project, reference, capsys, tmp_path):
    train = project / "src" / "proj" / "train.py"
    source = train.read_text()
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source.splitlines(keepends=True)}],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    train.unlink()
    (project / "src" / "proj" / "train.ipynb").write_text(json.dumps(notebook, indent=1))
    main(["check", "--format", "json", "--no-cache", "src/"])
    records = [r for r in json.loads(capsys.readouterr().out) if r["severity"] != "error"]
    others = per_file((r["path"], r["line"], r["column"], r["code"]) for r in records if not r["path"].endswith(".ipynb"))
    assert others == {p: v for p, v in reference.items() if p != "src/proj/train.py"}
    cells = sorted((r["line"], r["column"], r["code"]) for r in records if r["path"].endswith(".ipynb"))
    assert cells == reference["src/proj/train.py"] and {r["cell"] for r in records if r["path"].endswith(".ipynb")} == {1}


def test_the_verifier_matches_against_the_project_view(project, reference):
    from torchsync_lint.api import lint_with_callers

    result, reached = lint_with_callers("src/proj/train.py")
    assert sorted((f.line, f.column, f.code) for f in result.findings) == reference["src/proj/train.py"]
    for finding, lines in reached:
        assert (finding.line, finding.column, finding.code) in reference[finding.path], finding
        assert lines
    # engine.py:22's `.item()` runs in train_one_epoch, which train.py calls on one line
    call = next(n for n, text in enumerate((project / "src/proj/train.py").read_text().splitlines(), 1) if "train_one_epoch(" in text and "import" not in text)
    assert [lines for f, lines in reached if f.path.endswith("engine.py") and (f.line, f.code) == (22, "TSL101")] == [[call]]


@pytest.mark.parametrize("name", ["a_train.py", "zz_train.py", "main.py"])
def test_any_name_of_the_training_script(name, project, reference, capsys):
    (project / "src" / "proj" / "train.py").rename(project / "src" / "proj" / name)
    renamed = check(capsys, "--no-cache", "src/")
    moved = reference.pop("src/proj/train.py")
    assert renamed.pop(f"src/proj/{name}") == moved
    assert renamed == reference


# -- the analysis order: helper chains, cycles, self-imports, long chains ------------------------------

_TRAIN = """\
import torch
from {first} import f0

model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=True, num_workers=2)
for (x,) in loader:
    x = x.cuda(non_blocking=True)
    loss = model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    v = f0(loss)
"""


def _chain(root: Path, names: list[str], script: str, *, cycle: bool = False, self_import: bool = False) -> None:
    """script -> names[0].f0 -> names[1].f1 -> ... -> names[-1].fN, which calls `.item()`."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'chain'\n")
    (root / script).write_text(_TRAIN.format(first=names[0]))
    for i, name in enumerate(names):
        lines = ["import torch"]
        if self_import:
            lines.append(f"import {name}")
        if cycle and i > 0:
            lines.append(f"import {names[0]}")  # back to the head of the chain: an import cycle
        if i + 1 < len(names):
            lines += [f"from {names[i + 1]} import f{i + 1}", "", "", f"def f{i}(t):", f"    return f{i + 1}(t)", ""]
        else:
            lines += ["", "", f"def f{i}(t):", "    return t.item()", ""]
        (root / f"{name}.py").write_text("\n".join(lines))


def _chain_findings(capsys, root: Path, names: list[str]) -> list[tuple]:
    code = main(["check", "--format", "json", "--no-cache", str(root)])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    # the module of each finding, by its place in the chain (names differ from run to run)
    where = {f"{name}.py": f"c{i}" for i, name in enumerate(names)}
    return sorted((where.get(Path(r["path"]).name, "script"), r["line"], r["column"], r["code"]) for r in json.loads(out))


@pytest.mark.parametrize("length, cycle, self_import", [(2, False, False), (3, True, False), (3, False, True), (4, True, True), (10, False, False), (14, True, False)])
def test_a_chain_is_found_whatever_the_names(length, cycle, self_import, tmp_path, capsys):
    results = set()
    for trial, (prefix, script) in enumerate([("c", "train.py"), ("z", "a_train.py"), ("a", "zz.py"), ("m", "run.py")]):
        order = list(range(length))
        random.Random(trial).shuffle(order)
        names = [f"{prefix}{order[i]:02d}_{i}" for i in range(length)]  # sorted names follow no chain order
        root = tmp_path / f"t{trial}"
        _chain(root, names, script, cycle=cycle, self_import=self_import)
        found = tuple(_chain_findings(capsys, root, names))
        assert any(f[0] == f"c{length - 1}" and f[3] == "TSL101" for f in found), found  # the `.item()` at the end
        results.add(found)
    assert len(results) == 1, results
