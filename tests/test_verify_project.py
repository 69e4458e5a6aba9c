"""Issue 14's done-when: a training script written as projects write them
(tests/verify_data/project: argparse, a src/ package, tensorboard logging,
get_device_properties, AMP) runs under ``verify --steps 10 -- ...`` in well under its
timeout, stopped by the step clock, with its findings confirmed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torchsync_lint.cli import main  # noqa: E402

PROJECT = Path(__file__).resolve().parent / "verify_data" / "project"
TIMEOUT_S = 120


def _verify(tmp_path: Path, *script_args: str) -> tuple[int, list[dict], float]:
    out = tmp_path / "report.json"
    started = time.monotonic()
    # Run from elsewhere: --data is relative to the project root, the default working directory.
    code = main([
        "verify", str(PROJECT / "train.py"), "--backend", "emulate", "--steps", "10", "--timeout", str(TIMEOUT_S),
        "--format", "json", "--output-file", str(out), "--", "--epochs", "1000", "--data", "data/shapes.txt", *script_args,
    ])
    return code, json.loads(out.read_text()), time.monotonic() - started


def _check(code: int, entries: list[dict], elapsed: float) -> dict[tuple, dict]:
    by_key = {(e["line"], e["code"], e["status"]): e for e in entries}
    assert code == 0, json.dumps(entries, indent=2)
    stopped = by_key[(None, None, "stopped")]
    assert stopped["detail"] == "stopped by the step clock after 12 optimizer steps"  # 2 warm-up + 10
    for line, rule in ((49, "TSL101"), (52, "TSL102")):
        entry = by_key[(line, rule, "confirmed")]
        assert entry["marker"] == "expect" and entry["static"]
        assert entry["evidence"][0]["per_step"] == 1.0
    assert not [e for e in entries if e["failed"]]
    assert elapsed < TIMEOUT_S / 2  # 1000 epochs of 64 batches would take far longer
    return by_key


def test_a_project_script_with_arguments_a_src_package_and_amp_verifies(tmp_path):
    code, entries, elapsed = _verify(tmp_path, "--amp")
    by_key = _check(code, entries, elapsed)
    # GradScaler.step reads found_inf on the host every step: a real sync no rule reports.
    assert by_key[(47, None, "runtime-only")]["evidence"][0]["kind"] == "scalar-read"


def test_tensorboard_logging_runs_under_the_step_clock(tmp_path):
    pytest.importorskip("tensorboard")
    code, entries, elapsed = _verify(tmp_path, "--log-dir", str(tmp_path / "runs"))
    _check(code, entries, elapsed)
    assert list((tmp_path / "runs").glob("events.out.tfevents.*"))  # the writer was closed in `finally`


def test_a_project_script_that_reads_device_properties_verifies(tmp_path):
    code, entries, elapsed = _verify(tmp_path, "--amp", "--show-device")
    _check(code, entries, elapsed)
