"""End to end: ``torchsync-lint verify`` replays the scripts in tests/verify_data in
subprocesses and reports what it saw. Also: the lint path never imports torch, and the
cuda backend on a real GPU (skipped without one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from torchsync_lint.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "verify_data"
SCRIPTS = ["host_reads", "metrics", "input_pipeline", "clean", "unmarked_sync", "unconfirmed_marker", "crash", "early_exit"]


def _verify(tmp_path: Path, names: list[str], *extra: str, fmt: str = "json") -> tuple[int, str]:
    out = tmp_path / f"report.{fmt}"
    paths = [str(DATA / f"{name}.py") for name in names]
    code = main(["verify", *paths, "--backend", "emulate", "--format", fmt, "--output-file", str(out), *extra])
    return code, out.read_text()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    code, text = _verify(tmp_path_factory.mktemp("verify"), SCRIPTS, "--jobs", "2", "--timeout", "60")
    by_script: dict[str, list[dict]] = {}
    for entry in json.loads(text):
        by_script.setdefault(Path(entry["path"]).stem, []).append(entry)
    return code, by_script


def _statuses(entries):
    return {(e["line"], e["code"]): e["status"] for e in entries}


def test_exit_status_is_one_when_anything_fails(report):
    code, _ = report
    assert code == 1


def test_host_reads_confirmed_at_their_lines(report):
    _, by_script = report
    entries = by_script["host_reads"]
    assert _statuses(entries) == {
        (24, "TSL101"): "confirmed",
        (25, "TSL102"): "confirmed",
        (27, "TSL103"): "confirmed",
        (28, "TSL104"): "confirmed",
        (29, "TSL105"): "confirmed",
        (30, None): "confirmed",  # expect-sync: clip_grad_norm_(error_if_nonfinite=True)
    }
    assert not any(e["failed"] for e in entries)
    item = next(e for e in entries if e["code"] == "TSL101")
    assert item["evidence"] == [{"kind": "scalar-read", "op": "aten::_local_scalar_dense", "per_step": 1.0, "count": 6}]
    assert item["backend"] == "emulate"


def test_metric_syncs_inside_torchmetrics_land_on_the_user_lines(report):
    _, by_script = report
    entries = {e["code"]: e for e in by_script["metrics"]}
    assert entries["TSL201"]["status"] == "confirmed"
    assert entries["TSL201"]["evidence"][0]["per_step"] == 2.0  # nans.any() or nans_weight.any()
    assert entries["TSL202"]["evidence"][0]["kind"] == "h2d-blocking"
    assert entries["TSL206"]["evidence"][0]["op"] == "aten::bincount"
    assert not any(e["failed"] for e in by_script["metrics"])


def test_input_pipeline_hazards_confirmed(report):
    _, by_script = report
    assert _statuses(by_script["input_pipeline"]) == {
        (20, "TSL304"): "confirmed",
        (31, "TSL302"): "confirmed",
        (31, "TSL303"): "confirmed",
        (33, "TSL301"): "confirmed",
        (33, "TSL304"): "confirmed",
        (34, "TSL302"): "confirmed",
        (35, "TSL305"): "confirmed",
    }


def test_clean_script_reports_nothing(report):
    _, by_script = report
    assert "clean" not in by_script  # no entries at all: nothing synced in its steady state


def test_unmarked_sync_is_runtime_only_and_fails_the_clean_check(report):
    _, by_script = report
    (entry,) = by_script["unmarked_sync"]
    assert (entry["line"], entry["code"], entry["status"], entry["failed"]) == (20, None, "runtime-only", True)


def test_marker_on_a_host_tensor_is_unconfirmed(report):
    _, by_script = report
    (entry,) = by_script["unconfirmed_marker"]
    assert (entry["line"], entry["code"], entry["status"], entry["failed"]) == (21, "TSL101", "unconfirmed", True)


def test_crash_and_early_exit_are_script_level_failures(report):
    _, by_script = report
    (crash,) = by_script["crash"]
    assert crash["status"] == "crashed" and crash["failed"] and "boom at step 2" in crash["detail"]
    assert "harness_common" not in crash["detail"]  # only the user's frames
    (early,) = by_script["early_exit"]
    assert early["status"] == "early-exit" and early["failed"]


def test_hanging_script_times_out_and_the_run_goes_on(tmp_path):
    # hang.py never exits; the other script must still run (10 s leaves room on a loaded CI box)
    code, text = _verify(tmp_path, ["hang", "early_exit"], "--timeout", "10", "--jobs", "1")
    entries = {Path(e["path"]).stem: e for e in json.loads(text)}
    assert code == 1
    assert entries["hang"]["status"] == "timeout" and entries["hang"]["failed"]
    assert entries["early_exit"]["status"] == "early-exit"  # the next script still ran


def test_passing_script_exits_zero_and_junit_has_a_case_per_marker(tmp_path):
    code, text = _verify(tmp_path, ["metrics"], fmt="junit")
    assert code == 0
    root = ET.fromstring(text)
    cases = [c.get("name") for c in root.iter("testcase")]
    assert cases == ["run", "line 28 TSL201", "line 29 TSL202", "line 30 TSL206"]
    assert root.get("failures") == "0"


def test_markdown_report_names_what_it_ran_on_and_json_output_keeps_the_raw_entries(tmp_path):
    """The page to commit under docs/verification/ and its raw JSON, from one run."""
    import torch
    import torchmetrics

    md, raw = tmp_path / "results.md", tmp_path / "results.json"
    code = main(["verify", str(DATA / "metrics.py"), "--backend", "emulate", "--format", "markdown",
                 "--output-file", str(md), "--json-output", str(raw)])
    assert code == 0
    page = md.read_text()
    assert f"| torch | {torch.__version__} |" in page
    assert f"| torchmetrics | {torchmetrics.__version__} |" in page
    assert "| device | none: emulate backend" in page
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[1:3] for row in rows] == [["TSL201", "confirmed"], ["TSL202", "confirmed"], ["TSL206", "confirmed"]]
    assert "scalar-read `aten::_local_scalar_dense` 2/step" in rows[0]
    entries = json.loads(raw.read_text())
    assert [(e["line"], e["code"], e["status"]) for e in entries] == [(28, "TSL201", "confirmed"), (29, "TSL202", "confirmed"), (30, "TSL206", "confirmed")]


def test_compare_fixed_replays_the_fixed_version(tmp_path):
    body = SLOW_STEP.replace("# torchsync-fixture: steps=8 warmup=2", "# torchsync-fixture: steps=6 warmup=1")
    (tmp_path / "loop.py").write_text(body.format(stall="torch.cuda.synchronize()  # expect: TSL104"))
    (tmp_path / "loop.fixed.py").write_text(body.format(stall="pass"))
    out = tmp_path / "report.json"
    code = main(["verify", str(tmp_path), "--backend", "emulate", "--compare-fixed", "--format", "json", "--output-file", str(out)])
    entries = {e["status"]: e for e in json.loads(out.read_text())}
    assert code == 0
    assert set(entries) == {"confirmed", "fixed-compared"}  # loop.fixed.py is not checked as a fixture
    assert entries["fixed-compared"]["detail"] == "loop.fixed.py: syncs/step 1 -> 0; RESULT unchanged"


def test_unparsable_script_is_a_crash_not_an_internal_error(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("# torchsync-fixture: steps=2\nx = (\n")
    out = tmp_path / "report.json"
    code = main(["verify", str(broken), "--backend", "emulate", "--format", "json", "--output-file", str(out)])
    statuses = {e["status"]: e for e in json.loads(out.read_text())}
    assert code == 1
    assert set(statuses) == {"crashed", "lint-error"}
    assert "SyntaxError" in statuses["crashed"]["detail"] and not statuses["lint-error"]["failed"]


def test_measure_runs_under_emulate_and_says_when_there_is_nothing_to_measure(tmp_path, capsys):
    """--measure is not refused without a GPU (its CPU times are labelled as such,
    tests/test_verify_measure.py); a script with nothing to fix has no fixed version to time."""
    out = tmp_path / "r.json"
    assert main(["verify", str(DATA / "clean.py"), "--backend", "emulate", "--measure", "--format", "json", "--output-file", str(out)]) == 0
    (entry,) = [e for e in json.loads(out.read_text()) if e["status"] == "not-measured"]
    assert "no .fixed.py beside it and no fixer output" in entry["detail"] and not entry["failed"]


def test_lint_path_never_imports_torch():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchsync_lint", "check", str(DATA / "clean.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    modules = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "torchsync_lint.verify" in modules  # the CLI builds the verify parser...
    assert not {m for m in modules if m == "torch" or m.startswith("torch.")}  # ...without torch


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_has_cuda(), reason="a machine without CUDA")
def test_cuda_backend_refuses_to_run_without_a_gpu(tmp_path, capsys):
    """Host-clock step times of a CPU run must not be reported as GPU measurements."""
    from torchsync_lint.cli import main

    script = tmp_path / "s.py"
    script.write_text("print('RESULT {}')\n")
    assert main(["verify", str(script), "--backend", "cuda", "--measure"]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and "--backend emulate" in err


@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_cuda_backend_confirms_the_markers_on_a_gpu(tmp_path):
    code, text = (
        lambda out: (
            main(
                [
                    "verify",
                    *(str(DATA / f"{n}.py") for n in ("host_reads", "metrics", "input_pipeline", "clean")),
                    "--backend",
                    "cuda",
                    "--format",
                    "json",
                    "--output-file",
                    str(out),
                    "--trace-dir",
                    str(tmp_path / "traces"),
                ]
            ),
            out.read_text(),
        )
    )(tmp_path / "cuda.json")
    entries = json.loads(text)
    marker_entries = [e for e in entries if e["marker"]]
    missed = [(Path(e["path"]).name, e["line"], e["code"], e["status"], e["detail"], e["evidence"]) for e in marker_entries if e["status"] != "confirmed"]
    assert marker_entries and not missed, missed
    assert any(e["status"] == "profiled" for e in entries)
    assert list((tmp_path / "traces").glob("*.trace.json"))
    assert code == 0


SLOW_STEP = """\
# torchsync-fixture: steps=8 warmup=2
import argparse, json, time
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=8)
args = parser.parse_args()
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(args.steps):
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    {stall}
print("RESULT " + json.dumps({{"ok": True}}))
"""


def test_cuda_backend_parent_logic_runs_on_cpu(tmp_path):
    """The cuda harness degrades to CPU (no sync callbacks, host-clock timing): enough to
    exercise the profiler export, the step annotations and the --measure A/B end to end."""
    import argparse

    from torchsync_lint.verify import scripts
    from torchsync_lint.verify.cuda import backend
    from torchsync_lint.verify.steady_state import SteadyWindow

    original = tmp_path / "slow.py"
    original.write_text(SLOW_STEP.format(stall="time.sleep(0.03)"))
    (tmp_path / "slow.fixed.py").write_text(SLOW_STEP.format(stall="pass"))
    script = scripts.load_script(str(original))
    run = backend.attribute(script.path, ["--steps", "8"], timeout=60)
    assert run.status == "ok" and run.step_basis == "optimizer" and run.total_steps == 8
    window = SteadyWindow(run.step_basis, run.total_steps, script.warmup, run.excluded_steps)
    args = argparse.Namespace(timeout=60, trace_dir=str(tmp_path / "traces"), measure=True, repeats=1)
    from torchsync_lint.verify.fixed_variant import fixed_variant

    with fixed_variant(script) as variant:
        profiled, measured = backend.profile_and_measure(script, ["--steps", "8"], args, [], run, window, variant)

    assert profiled.status == "profiled"
    (trace_file,) = (tmp_path / "traces").glob("*.trace.json")
    names = {e.get("name") for e in json.loads(trace_file.read_text())["traceEvents"]}
    assert {"torchsync::optimizer=1", "torchsync::optimizer=8"} <= names

    assert measured.status == "measured", measured.detail
    assert 20.0 < measured.cost_ms_per_step < 60.0  # the 30 ms stall, give or take scheduling
    assert measured.cost_pct > 50.0
    assert "syncs/step 0 -> 0" in measured.detail
