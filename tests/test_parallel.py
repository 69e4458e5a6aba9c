"""`check` and `--fix` spread many files over worker processes; the result must not depend
on how many."""

from __future__ import annotations

import json
import os

import pytest

from torchsync_lint import parallel
from torchsync_lint.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOT_READ = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for step in range({n}):
    loss = model(torch.randn(4, 2, device=device)).sum()
    loss.backward()
    opt.step()
    total += loss.item()
"""


def test_map_files_runs_many_files_in_workers_and_keeps_their_order():
    files = [f"f{i}.py" for i in range(parallel.PARALLEL_MIN_FILES * 2)]
    results = parallel.map_files(_pid_and_name, files, jobs=2)
    assert [name for _, name in results] == files
    assert os.getpid() not in {pid for pid, _ in results}  # none was done in this process


def test_map_files_stays_in_process_for_few_files_or_one_job():
    few = [f"f{i}.py" for i in range(parallel.PARALLEL_MIN_FILES - 1)]
    many = [f"f{i}.py" for i in range(parallel.PARALLEL_MIN_FILES * 2)]
    assert {pid for pid, _ in parallel.map_files(_pid_and_name, few, jobs=4)} == {os.getpid()}
    assert {pid for pid, _ in parallel.map_files(_pid_and_name, many, jobs=1)} == {os.getpid()}


def test_map_files_falls_back_to_this_process_when_no_pool_can_start(monkeypatch):
    import concurrent.futures

    class NoPool:
        def __init__(self, *args, **kwargs):
            raise OSError("no /dev/shm")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoPool)
    files = [f"f{i}.py" for i in range(parallel.PARALLEL_MIN_FILES * 2)]
    assert parallel.map_files(_pid_and_name, files, jobs=2) == [(os.getpid(), f) for f in files]


@pytest.mark.parametrize("value, expected", [("3", 3), ("0", None), ("x", None), ("", None)])
def test_default_jobs_reads_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(parallel.JOBS_ENV, value)
    fallback = max(1, min(os.cpu_count() or 1, 8))
    assert parallel.default_jobs() == (expected or fallback)


def test_check_reports_the_same_findings_with_one_or_two_jobs(tmp_path, capsys):
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}.json"
        rc = main(["check", os.path.join(ROOT, "fixtures"), "--isolated", "--jobs", str(jobs), "--format", "json", "-o", str(out)])
        assert rc == 1
        outputs[jobs] = json.loads(out.read_text())
    assert len(outputs[1]) >= 50
    assert outputs[1] == outputs[2]


def test_fix_with_two_jobs_writes_what_one_job_writes(tmp_path, capsys):
    trees = {}
    for jobs in (1, 2):
        tree = tmp_path / f"jobs{jobs}"
        tree.mkdir()
        for i in range(parallel.PARALLEL_MIN_FILES + 4):
            (tree / f"train_{i:02d}.py").write_text(HOT_READ.format(n=i + 1))
        (tree / "broken.py").write_text("import torch\ndef f(:\n")  # reported, never written
        rc = main(["check", str(tree), "--isolated", "--fix", "--unsafe-fixes", "--jobs", str(jobs)])
        assert rc == 2  # nothing left to fix, one file could not be parsed
        trees[jobs] = {p.name: p.read_text() for p in sorted(tree.iterdir())}
    assert trees[1] == trees[2]
    assert trees[1]["broken.py"] == "import torch\ndef f(:\n"
    assert all(".detach()" in text for name, text in trees[1].items() if name != "broken.py")


def _pid_and_name(path: str) -> tuple[int, str]:
    return os.getpid(), path
