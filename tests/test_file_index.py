"""The stat-keyed index of the modules' texts (project/file_index.py) and the cached scopes
(project/session_scope.py): a warm run reads no module but the one it lints, and an edit is
seen however the file changed (a new size, a new time), as a fresh run would see it."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from torchsync_lint import sources
from torchsync_lint.project import file_index
from torchsync_lint.api import config_for, lint_paths
from torchsync_lint.project.file_index import FileIndex
from torchsync_lint.project.cache import Cache

HELPER = """\
import torch


def on_device(t):
    return t.to("cuda")
"""

HELPER_CLEAN = """\
import torch


def on_device(t):
    return t
"""

SCRIPT = """\
import torch
from helpers import on_device

model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = on_device(torch.randn(8, 4))
    loss = model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if x.sum() > 0:
        print(step)
"""

OTHERS = 30  # modules of the project the script never imports


def _project(root: Path) -> None:
    (root / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (root / "helpers.py").write_text(HELPER)
    (root / "train.py").write_text(SCRIPT)
    for i in range(OTHERS):
        (root / f"other{i}.py").write_text(f"import os\n\nVALUE_{i} = {i}\n")
    _age(root)


def _age(root: Path, seconds: int = 600) -> None:
    """Every file as if saved ``seconds`` ago (a file saved just now is never indexed: racy)."""
    past = time.time() - seconds
    for path in root.rglob("*.py"):
        os.utime(path, (past, past))


def _codes(root: Path, target: str = "train.py") -> list[tuple[str, int, str]]:
    results = lint_paths([str(root / target)], config_for([str(root / target)]), jobs=1)
    return sorted((os.path.basename(r.path), f.line, f.code) for r in results for f in r.findings)


@pytest.fixture(autouse=True)
def settled(monkeypatch, request):
    """The files of these tests were written just now: their status-change times are recent,
    so the index would take them all for racy. Trust them (the racy test keeps the guard)."""
    if "racy" not in request.node.name:
        monkeypatch.setattr(file_index, "_RACY_NS", 0)


@pytest.fixture
def reads(monkeypatch):
    """The basenames of the files sources.read opens, in order."""
    seen: list[str] = []
    real = sources.read

    def counting(path, *args, **kwargs):
        seen.append(os.path.basename(str(path)))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(sources, "read", counting)
    return seen


def test_a_warm_run_reads_only_the_linted_file(tmp_path, reads):
    _project(tmp_path)
    cold = _codes(tmp_path)
    assert cold == [("train.py", 12, "TSL102")]  # (x is on the device only by what the helper returns)
    assert len(set(reads)) >= OTHERS  # the cold run looks at every module (who may import train.py?)
    reads.clear()
    assert _codes(tmp_path) == cold
    assert set(reads) <= {"train.py"}, reads


def test_an_edit_that_changes_the_size_is_seen(tmp_path, reads):
    _project(tmp_path)
    before = _codes(tmp_path)
    (tmp_path / "helpers.py").write_text(HELPER_CLEAN)
    _age(tmp_path, 300)
    after = _codes(tmp_path)
    assert before == [("train.py", 12, "TSL102")] and after == []
    assert after == _fresh(tmp_path)


def test_an_edit_of_the_same_size_is_seen_by_its_new_time(tmp_path):
    _project(tmp_path)
    before = _codes(tmp_path)
    clean = HELPER_CLEAN.replace("return t\n", "return t  # .......\n")  # as long as `t.to("cuda")`
    assert len(clean) == len(HELPER)
    (tmp_path / "helpers.py").write_text(clean)
    _age(tmp_path, 300)
    after = _codes(tmp_path)
    assert before == [("train.py", 12, "TSL102")] and after == []
    assert after == _fresh(tmp_path)


def test_a_racy_file_is_read_again(tmp_path, reads):
    """A file changed within the guard's span of its read is not recorded: the next run reads
    it again (its next save could fall within the timestamps' resolution)."""
    _project(tmp_path)  # (every file's status-change time is now)
    _codes(tmp_path)
    reads.clear()
    _codes(tmp_path)
    assert {"helpers.py", "other0.py"} <= set(reads)


def test_a_new_module_that_imports_the_script_changes_its_scope(tmp_path):
    _project(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT + "\n\ndef report(t):\n    return float(t)\n")
    _age(tmp_path)
    alone = _codes(tmp_path)
    (tmp_path / "caller.py").write_text(SCRIPT.replace("from helpers import on_device", "from helpers import on_device\nfrom train import report").replace("print(step)", "print(report(loss))"))
    _age(tmp_path, 300)
    now = _codes(tmp_path)
    assert now == _fresh(tmp_path)
    assert now != alone  # report() now has a caller that hands it the loss: its float() syncs
    assert _codes(tmp_path, "caller.py") == _fresh(tmp_path, "caller.py")


def _fresh(root: Path, target: str = "train.py") -> list[tuple[str, int, str]]:
    results = lint_paths([str(root / target)], config_for([str(root / target)]), jobs=1, use_cache=False)
    return sorted((os.path.basename(r.path), f.line, f.code) for r in results for f in r.findings)


def test_the_index_keeps_only_what_it_was_told(tmp_path):
    cache = Cache(tmp_path)
    index = FileIndex(cache)
    old = time.time_ns() - 10_000_000_000
    index.record("a.py", (10, 7, old, old), "abc")
    index.record("b.py", (10, 8, old, time.time_ns()), "def")  # changed just now: not recorded
    index.save(["a.py", "b.py"])
    again = FileIndex(cache)
    assert again.sha("a.py", (10, 7, old, old)) == "abc"
    for other in ((11, 7, old, old), (10, 9, old, old), (10, 7, old + 1, old), (10, 7, old, old + 1)):
        assert again.sha("a.py", other) is None  # any part of the stat moved: read again
    assert again.sha("b.py", (10, 8, old, time.time_ns())) is None
    again.record("c.py", (3, 1, old, old), "ghi")
    again.save(["c.py"])  # a.py deleted since: its entry goes
    third = FileIndex(cache)
    assert third.sha("a.py", (10, 7, old, old)) is None and third.sha("c.py", (3, 1, old, old)) == "ghi"


def test_a_damaged_index_is_a_miss(tmp_path):
    _project(tmp_path)
    cold = _codes(tmp_path)
    for entry in (tmp_path / ".torchsync_cache").rglob("*.json"):
        if "/index/" in str(entry):
            entry.write_bytes(b"tsl-cache 1 garbage\n{}")
    assert _codes(tmp_path) == cold
