"""benchmarks/verify_gpu_scale.sh (and its core, benchmarks/verify_scale.py): the one command
that measures what each finding of fixtures/scale/ costs on a GPU also runs, whole, under
emulate on the small scale, and writes the page and the JSON the GPU run would commit."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.markers import read_markers

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "benchmarks" / "verify_scale.py"


def _core():
    spec = importlib.util.spec_from_file_location("verify_scale", CORE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_named_after_the_device():
    core = _core()
    assert core.device_slug({"gpu": "NVIDIA H200"}, "cuda") == "cuda-h200"
    assert core.device_slug({"gpu": "NVIDIA H100 80GB HBM3"}, "cuda") == "cuda-h100-80gb-hbm3"
    assert core.device_slug({"gpu": None}, "cuda") == "cuda-gpu"
    assert core.device_slug({"gpu": "NVIDIA H200"}, "emulate") == "emulate-cpu"


def test_the_one_command_runs_under_emulate(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    fixture = "fixtures/scale/metrics_resnet50.py"
    env = dict(
        os.environ, BACKEND="emulate", REPEATS="2", SCRIPTS=fixture, OUT=str(tmp_path), PY=sys.executable, END="400",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(["bash", "benchmarks/verify_gpu_scale.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = (tmp_path / "r" / "verify_scale.log").read_text(encoding="utf-8") if (tmp_path / "r" / "verify_scale.log").exists() else ""
    assert done.returncode == 0, done.stdout + done.stderr + log
    assert (tmp_path / "results.tar.gz").exists()

    markers = {(m.line, m.code) for m in read_markers(str(ROOT / fixture)) if m.kind == "expect"}
    data = json.loads((tmp_path / "r" / "emulate-cpu-scale.json").read_text(encoding="utf-8"))
    assert data["backend"] == "emulate" and data["scale"] == "small" and data["repeats"] == 2 and data["exit_status"] == 0
    (script,) = data["scripts"]
    assert script["script"] == fixture and not script["failing"]
    assert {tuple(pair) for pair in script["confirmed"]} == markers
    measurement = script["measurement"]
    assert measurement["cpu_times"] is True and measurement["timer"] == "host-clock"
    assert measurement["whole"]["runs"] == 2
    # The metric fixture's one fixable finding (TSL201's nan_strategy) is isolated; the
    # bincount one (TSL206) has no automatic fix.
    isolated = [(f["line"], f["code"]) for one in measurement["findings"] for f in one["findings"]]
    unfixed = [(f["line"], f["code"]) for f in measurement["not_isolated"]]
    assert [code for _, code in isolated] == ["TSL201"] and [code for _, code in unfixed] == ["TSL206"]
    assert set(isolated) | set(unfixed) == markers

    page = (tmp_path / "r" / "emulate-cpu-scale.md").read_text(encoding="utf-8")
    assert "they do not predict the GPU cost" in page and "pending" in page
    assert f"| TSL201 at line {isolated[0][0]} alone |" in page
    assert f"Not isolated (no automatic fix): TSL206 at line {unfixed[0][0]}." in page
