"""A script that ends with ``os._exit(0)`` part-way through its steps: the harness never
writes its record, and the run was reported "crashed -- exit status 0". It is an early exit
with status 0, before the script finished its steps (verify's table, and the sync budget)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchsync_lint.verify import runner

EXITS_EARLY = """\
import os
import torch
model = torch.nn.Linear(4, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    loss = model(torch.randn(8, 4, device="cuda")).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 3:
        os._exit(0)  # skips every handler: the verifier's harness too
"""


def test_no_record_and_status_0_is_an_early_exit_not_a_crash():
    run = runner._classify(None, 0, "", "", 1.0)
    assert run.status == runner.EARLY_EXIT
    assert "exited early with status 0, before finishing its steps" in run.detail and "crash" not in run.detail


@pytest.mark.parametrize(("returncode", "detail"), [(3, "exit status 3"), (-9, "killed by SIGKILL"), (None, "ended without an exit status (killed with its supervisor)")])
def test_no_record_with_another_status_is_still_a_crash(returncode, detail):
    run = runner._classify(None, returncode, "", "", 1.0)
    assert run.status == runner.CRASHED and run.detail == detail


def _write(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(EXITS_EARLY))
    return script


def test_verify_reports_the_early_exit(tmp_path):
    pytest.importorskip("torch")
    from torchsync_lint.cli import main

    script, out = _write(tmp_path), tmp_path / "report.json"
    code = main(["verify", str(script), "--backend", "emulate", "--steps", "10", "--timeout", "120", "--format", "json", "--output-file", str(out)])
    (entry,) = [e for e in json.loads(out.read_text()) if e["status"] in ("crashed", "early-exit")]
    assert code == 1 and entry["failed"]
    assert entry["status"] == "early-exit" and entry["detail"].startswith("exited early with status 0, before finishing its steps")


def test_the_budget_says_the_script_exited_early(tmp_path):
    pytest.importorskip("torch")
    from torchsync_lint.cli import main

    script, out = _write(tmp_path), tmp_path / "report.txt"
    code = main(["verify", str(script), "--budget", str(tmp_path / "syncs.toml"), "--update-budget", "--backend", "emulate", "--steps", "10", "--timeout", "120", "--output-file", str(out)])
    assert code == 2 and not (tmp_path / "syncs.toml").exists()
    assert "the script exited early with status 0, before finishing its steps" in out.read_text()
