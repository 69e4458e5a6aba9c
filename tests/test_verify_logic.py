"""Pure logic of the verifier (no torch, no subprocess): steady state, matching, reports,
the runner's outcome classification, and the cuda backend's trace/statistics/labels."""

from __future__ import annotations

import json
import os
import types
from xml.etree import ElementTree as ET

import pytest

from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify import runner, scripts, steady_state
from torchsync_lint.verify.cuda import ab_stats, sync_labels, trace
from torchsync_lint.verify.evidence import RuntimeEvent
from torchsync_lint.verify.matching import Entry, Expectation, match_script, merge_expectations
from torchsync_lint.verify.report import render_json, render_junit, render_text
from torchsync_lint.verify.steady_state import SteadyWindow


# -- steady state -------------------------------------------------------------------------
def test_steady_window_excludes_warmup_setup_and_last_step():
    window = SteadyWindow(steady_state.OPTIMIZER, total=8, warmup=2)
    assert [k for k in range(-1, 10) if window.contains(k)] == [2, 3, 4, 5, 6]
    assert window.per_step(10) == 2.0


def test_warmup_is_at_least_one_so_setup_never_counts():
    window = SteadyWindow(steady_state.OPTIMIZER, total=6, warmup=0)
    assert not window.contains(0) and window.contains(1)


def test_no_clock_counts_everything_but_has_no_rate():
    window = SteadyWindow(None, total=0)
    assert window.contains(None) and window.contains(5)
    assert window.per_step(3) is None


def test_step_index_conventions():
    assert steady_state.choose_basis(0, 5) == steady_state.BATCHES
    assert steady_state.choose_basis(3, 5) == steady_state.OPTIMIZER
    assert steady_state.step_index(steady_state.OPTIMIZER, 2, 7) == 2
    assert steady_state.step_index(steady_state.BATCHES, 2, 7) == 6
    assert steady_state.step_index(None, 2, 7) is None


# -- matching -----------------------------------------------------------------------------
WINDOW = SteadyWindow(steady_state.OPTIMIZER, total=6, warmup=1)  # steps 1..4


def events(line, kind, op="op", steps=range(6)):
    return [RuntimeEvent(line, kind, op, s) for s in steps]


def test_marker_confirmed_by_a_matching_kind_with_per_step_rate():
    exps = [Expectation(10, "TSL201", static=True, marker=True)]
    entries = match_script("f.py", exps, events(10, ev.SCALAR_READ) * 2, WINDOW, "emulate")
    (entry,) = entries
    assert entry.status == "confirmed" and not entry.failed
    assert entry.evidence[0].per_step == 2.0 and entry.evidence[0].count == 12


def test_marker_with_the_wrong_kind_is_unconfirmed_and_fails():
    exps = [Expectation(10, "TSL301", marker=True)]
    entries = match_script("f.py", exps, events(10, ev.SCALAR_READ), WINDOW, "emulate")
    marker_entry = next(e for e in entries if e.code == "TSL301")
    assert marker_entry.status == "unconfirmed" and marker_entry.failed
    assert "scalar-read" in marker_entry.detail


def test_unconfirmed_static_finding_without_marker_does_not_fail():
    entries = match_script("f.py", [Expectation(10, "TSL101", static=True)], [], WINDOW, "emulate")
    assert entries[0].status == "unconfirmed" and not entries[0].failed


def test_not_observable_rule_is_not_a_failure():
    exps = [Expectation(4, "TSL205", marker=True)]
    (entry,) = match_script("f.py", exps, [], WINDOW, "emulate", observable={"TSL205": False})
    assert entry.status == "not-observable" and not entry.failed


def test_gated_sync_during_warmup_still_confirms():
    exps = [Expectation(10, "TSL101", marker=True)]
    (entry,) = match_script("f.py", exps, events(10, ev.SCALAR_READ, steps=[0]), WINDOW, "emulate")
    assert entry.status == "confirmed" and entry.evidence[0].per_step == 0.0


def test_expect_sync_needs_a_sync_at_the_line():
    exps = [Expectation(7, None, marker=True), Expectation(9, None, marker=True)]
    entries = match_script("f.py", exps, events(7, ev.BINCOUNT), WINDOW, "emulate")
    by_line = {e.line: e for e in entries}
    assert by_line[7].status == "confirmed" and not by_line[7].failed
    assert by_line[9].status == "unconfirmed" and by_line[9].failed


def test_runtime_only_reports_unexplained_kinds_and_fails_only_clean_scripts():
    evts = events(5, ev.SCALAR_READ) + events(5, ev.H2D_BLOCKING)
    marked = match_script("f.py", [Expectation(5, "TSL201", marker=True)], evts, WINDOW, "emulate")
    runtime_only = [e for e in marked if e.status == "runtime-only"]
    assert [x.kind for x in runtime_only[0].evidence] == [ev.H2D_BLOCKING]  # TSL201 explains the scalar reads
    assert not runtime_only[0].failed  # the script has markers: not a clean fixture
    clean = match_script("f.py", [], evts, WINDOW, "emulate")
    assert len(clean) == 1 and clean[0].failed


def test_clean_script_may_sync_outside_steady_state():
    setup_and_final = events(3, ev.H2D_BLOCKING, steps=[0]) + events(20, ev.SCALAR_READ, steps=[6])
    assert match_script("f.py", [], setup_and_final, WINDOW, "emulate") == []


def test_dataloader_hazards_are_reported_outside_steady_state_but_do_not_fail_clean():
    (entry,) = match_script("f.py", [], events(12, ev.DATALOADER_MAIN_PROCESS, steps=[0]), WINDOW, "emulate")
    assert entry.status == "runtime-only" and not entry.failed


def test_host_normalisation_at_the_copy_line_is_explained_by_the_tsl304_finding():
    evts = events(30, ev.HOST_NORMALIZED_H2D) + events(64, ev.HOST_NORMALIZED_H2D)
    entries = match_script("f.py", [Expectation(30, "TSL304", marker=True)], evts, WINDOW, "emulate")
    assert [(e.line, e.status) for e in entries] == [(30, "confirmed")]
    # without the finding, the copy line is a static false negative
    unexplained = match_script("f.py", [Expectation(5, "TSL101", marker=True)], evts, WINDOW, "emulate")
    assert {e.line for e in unexplained if e.status == "runtime-only"} == {30, 64}


def test_a_cross_rank_gather_every_few_steps_is_gated_not_a_failure_of_a_clean_script():
    # WINDOW's steady steps are 1..4; the metric is computed (and gathered) at step 2 only.
    gathered = events(82, ev.DISTRIBUTED_SYNC, op="dist.barrier in torchmetrics Metric._sync_dist", steps=[2, 2, 5])
    (entry,) = match_script("f.py", [], gathered, WINDOW, "emulate")
    assert entry.status == "gated" and not entry.failed and entry.line == 82
    assert [x.kind for x in entry.evidence] == [ev.DISTRIBUTED_SYNC] and entry.evidence[0].per_step == 0.5
    assert "1 of 4 steady steps" in entry.detail


def test_a_cross_rank_gather_every_step_fails_a_clean_script():
    every_step = events(82, ev.DISTRIBUTED_SYNC, steps=range(6))
    (entry,) = match_script("f.py", [], every_step, WINDOW, "emulate")
    assert entry.status == "runtime-only" and entry.failed
    # ... and it is the evidence that confirms an every-step compute() finding
    (confirmed,) = match_script("f.py", [Expectation(82, "TSL204", marker=True)], every_step, WINDOW, "emulate")
    assert confirmed.status == "confirmed"


def test_only_distributed_syncs_can_be_gated():
    # A gated .item() the linter missed is still a static false negative of a clean script,
    # and a gather mixed with such a read does not hide it.
    gated_read = events(40, ev.SCALAR_READ, steps=[2])
    (entry,) = match_script("f.py", [], gated_read, WINDOW, "emulate")
    assert entry.status == "runtime-only" and entry.failed
    (mixed,) = match_script("f.py", [], gated_read + events(40, ev.DISTRIBUTED_SYNC, steps=[2]), WINDOW, "emulate")
    assert mixed.status == "runtime-only" and mixed.failed


def test_without_a_step_clock_nothing_is_gated():
    (entry,) = match_script("f.py", [], events(82, ev.DISTRIBUTED_SYNC, steps=[None]), SteadyWindow(None, total=0), "emulate")
    assert entry.status == "runtime-only" and entry.failed


def test_an_emulation_note_is_reported_at_its_line_and_never_fails():
    note = [RuntimeEvent(12, ev.EMULATED, "torch.compile: the model runs eagerly", 0)]
    (entry,) = match_script("f.py", [], note, WINDOW, "emulate")
    assert (entry.line, entry.status, entry.failed) == (12, "note", False)
    assert entry.detail == "torch.compile: the model runs eagerly"
    assert "1 note" in render_text([entry], ["f.py"], "emulate")
    # a note in the steady state is not a sync either
    steady = [RuntimeEvent(12, ev.EMULATED, "x", 3)]
    assert [e.status for e in match_script("f.py", [], steady, WINDOW, "emulate")] == ["note"]


def test_merge_keeps_static_and_marker_flags():
    merged = merge_expectations([Expectation(3, "TSL101", "host-read-in-loop", static=True)], [Expectation(3, "TSL101", marker=True)])
    assert merged == [Expectation(3, "TSL101", "host-read-in-loop", "", True, True)]


def test_every_rule_family_has_confirming_evidence():
    confirmable = set().union(*ev.CONFIRMS.values())
    for code in ["TSL101", "TSL102", "TSL103", "TSL104", "TSL105", "TSL201", "TSL202", "TSL206", "TSL301", "TSL302", "TSL303", "TSL304", "TSL305"]:
        assert code in confirmable, code
    assert "TSL205" not in confirmable


# -- reports ------------------------------------------------------------------------------
def _sample_entries():
    exps = [Expectation(10, "TSL101", "host-read-in-loop", static=True, marker=True), Expectation(12, "TSL301", marker=True)]
    entries = match_script("a.py", exps, events(10, ev.SCALAR_READ), WINDOW, "emulate")
    entries += match_script("clean.py", [], events(8, ev.SCALAR_READ), WINDOW, "emulate")
    return entries


def test_json_report_schema():
    data = json.loads(render_json(_sample_entries()))
    assert [(d["path"], d["line"], d["code"], d["status"]) for d in data] == [
        ("a.py", 10, "TSL101", "confirmed"),
        ("a.py", 12, "TSL301", "unconfirmed"),
        ("clean.py", 8, None, "runtime-only"),
    ]
    first = data[0]
    assert first["evidence"] == [{"kind": "scalar-read", "op": "op", "per_step": 1.0, "count": 6}]
    assert {"cost_ms_per_step", "cost_pct", "backend"} <= set(first)


def test_junit_one_testcase_per_marker_plus_run_and_clean():
    root = ET.fromstring(render_junit(_sample_entries(), ["a.py", "clean.py"]))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    names_a = [c.get("name") for c in suites["a.py"].iter("testcase")]
    assert names_a == ["run", "line 10 TSL101", "line 12 TSL301"]
    assert suites["a.py"].get("failures") == "1"
    clean_cases = {c.get("name"): c for c in suites["clean.py"].iter("testcase")}
    assert clean_cases["clean: no steady-state syncs"].find("failure") is not None
    assert root.get("failures") == "2"


def test_junit_survives_control_characters_in_a_traceback():
    """A crashed script's traceback may carry ANSI colour codes, which XML cannot hold."""
    crashed = Entry("a.py", None, None, "crashed", "emulate", failed=True, detail="Traceback\n\x1b[31mValueError\x1b[0m: boom")
    root = ET.fromstring(render_junit([crashed], ["a.py"]))
    failure = root.find(".//failure")
    assert failure is not None and "ValueError" in failure.text and "\x1b" not in failure.text


def test_text_report_summary():
    text = render_text(_sample_entries(), ["a.py", "clean.py"])
    assert "a.py:12" in text and "unconfirmed FAIL" in text
    assert text.strip().splitlines()[-1].startswith("verify: 2 script(s), backend emulate, 1 confirmed, 1 unconfirmed")


# -- runner outcome classification --------------------------------------------------------
def test_result_line_must_be_last():
    assert runner.parse_result_line('x\nRESULT {"a": 1}\n\n') == {"a": 1}
    assert runner.parse_result_line('RESULT {"a": 1}\nmore output') is None
    assert runner.parse_result_line("RESULT not json") is None


def test_classify_crash_early_exit_and_ok():
    record = {"events": [], "step_basis": None, "total_steps": 0, "error": None, "exit_code": 0}
    assert runner._classify(record, 0, 'RESULT {}', "", 1.0).status == runner.OK
    assert runner._classify(record, 0, "no result", "", 1.0).status == runner.EARLY_EXIT
    assert runner._classify(record, 0, "no result", "", 1.0, require_result=False).status == runner.OK
    crashed = runner._classify({**record, "error": "Traceback...\nValueError: x"}, 1, "", "", 1.0)
    assert crashed.status == runner.CRASHED and crashed.detail.endswith("ValueError: x")
    assert runner._classify(None, -9, "", "Killed", 1.0).status == runner.CRASHED


# -- script discovery ---------------------------------------------------------------------
def test_discovery_needs_the_pragma_and_skips_fixed_variants(tmp_path):
    (tmp_path / "a.py").write_text("# torchsync-fixture: steps=4 warmup=1 requires=surely_not_a_module_xyz\n")
    (tmp_path / "a.fixed.py").write_text("# torchsync-fixture: steps=4\n")
    (tmp_path / "helper.py").write_text("x = 1\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text("x = 1\n")  # no pragma: nothing to run in src/
    found, missing, empty = scripts.discover([str(tmp_path), str(tmp_path / "nope.py"), str(tmp_path / "src"), str(tmp_path / "a.fixed.py")])
    assert found == [str(tmp_path / "a.py")] and missing == [str(tmp_path / "nope.py")]
    assert empty == [str(tmp_path / "src"), str(tmp_path / "a.fixed.py")]
    script = scripts.load_script(found[0])
    assert (script.steps, script.warmup) == (4, 1)
    assert script.missing_requirements == ["surely_not_a_module_xyz"]
    assert script.fixed_path == str(tmp_path / "a.fixed.py")


# -- cuda backend: trace parsing ----------------------------------------------------------
def _kineto_like_trace():
    """Synthetic trace in the shape torch.profiler exports (cuda_runtime, cuda_sync,
    gpu_memcpy, user_annotation + its gpu_user_annotation twin). Optimizer ticks at 100,
    200, ..., 600 us; one cudaStreamSynchronize (20 us) and one DtoH copy per step."""
    events = [{"ph": "M", "name": "process_name", "args": {"name": "python"}}]
    for count in range(1, 7):
        ts = 100.0 * count
        events.append({"ph": "X", "cat": "user_annotation", "name": f"torchsync::optimizer={count}", "ts": ts, "dur": 1})
        events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"torchsync::optimizer={count}", "ts": ts + 500, "dur": 1})
    for step in range(7):
        base = 100.0 * step + 50
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": base, "dur": 20})
        events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": base + 1, "dur": 2, "args": {"bytes": 4}})
        events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "ts": base + 3, "dur": 15})
        events.append({"ph": "X", "cat": "kernel", "name": "void gemm<...>", "ts": base + 20, "dur": 30})
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 5.0, "dur": 100})  # setup
    return {"traceEvents": events}


def test_trace_summary_counts_steady_state_syncs_per_step(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_kineto_like_trace()))
    summary = trace.summarize(str(path), warmup=2)
    assert summary.basis == "optimizer" and summary.total_steps == 6
    assert summary.window == (2, 5)
    assert summary.per_step == {
        "Memcpy DtoH (Device -> Pageable)": 1.0,
        "Stream Sync": 1.0,
        "cudaStreamSynchronize": 1.0,
    }
    assert summary.blocked_us_per_step == 20.0  # the setup cudaDeviceSynchronize is outside the window
    assert summary.counts["cudaStreamSynchronize"] == 7 and summary.counts["cudaDeviceSynchronize"] == 1


def test_trace_sync_events_leave_out_async_copies_and_gpu_side_waits():
    """A pinned non_blocking upload, a copy into pinned memory and a cross-stream wait are
    what the fixes produce: counting them would make a fixed script look like it still syncs."""

    def event(name: str, cat: str) -> trace.TraceEvent:
        return trace.TraceEvent(name=name, category=cat, ts=0.0, dur=1.0)

    syncs = [
        event("cudaStreamSynchronize", "cuda_runtime"),
        event("cudaDeviceSynchronize", "cuda_runtime"),
        event("cudaEventSynchronize", "cuda_runtime"),
        event("cudaMemcpy", "cuda_runtime"),
        event("Stream Sync", "cuda_sync"),
        event("Event Sync", "cuda_sync"),
        event("Context Sync", "cuda_sync"),
        event("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy"),
        event("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy"),
        event("Memcpy DtoH", "gpu_memcpy"),
    ]
    not_syncs = [
        event("Stream Wait Event", "cuda_sync"),
        event("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy"),
        event("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy"),
        event("Memcpy DtoD (Device -> Device)", "gpu_memcpy"),
        event("cudaMemcpyAsync", "cuda_runtime"),
        event("cudaStreamWaitEvent", "cuda_runtime"),
        event("cudaEventRecord", "cuda_runtime"),
        event("void gemm<...>", "kernel"),
    ]
    assert [e.name for e in syncs if not trace.is_sync_event(e)] == []
    assert [e.name for e in not_syncs if trace.is_sync_event(e)] == []


def test_trace_accepts_string_timestamps():
    """Chrome-trace writers differ: some quote "ts"/"dur" to keep every digit."""
    events = trace.load_events({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": "1001.500", "dur": "2.250"}]})
    assert (events[0].ts, events[0].dur) == (1001.5, 2.25)


def test_trace_without_markers_has_no_rates():
    summary = trace.summarize({"traceEvents": [{"ph": "X", "name": "cudaStreamSynchronize", "cat": "cuda_runtime", "ts": 1, "dur": 2}]})
    assert summary.basis is None and summary.per_step == {} and summary.counts == {"cudaStreamSynchronize": 1}


def test_step_of_uses_the_latest_marker():
    markers = [(100.0, 1), (200.0, 2)]
    assert trace.step_of(50.0, "optimizer", markers) == 0
    assert trace.step_of(150.0, "optimizer", markers) == 1
    assert trace.step_of(150.0, "batches", markers) == 0


# -- cuda backend: one event per sync from two signals --------------------------------------
def test_a_stream_sync_signalled_twice_is_recorded_once_in_either_order():
    pairing = sync_labels.SyncSignalPairing()
    # .item(): the callback fires during the op, the buffered warning when it returns
    assert pairing.callback(sync_labels.STREAM) is True
    assert pairing.warning() is False
    # the other order pairs too
    assert pairing.warning() is True
    assert pairing.callback(sync_labels.STREAM) is False
    # bincount: two syncs inside one op, both warnings flushed at its end
    assert [pairing.callback(sync_labels.STREAM), pairing.callback(sync_labels.STREAM)] == [True, True]
    assert [pairing.warning(), pairing.warning()] == [False, False]
    # torch.cuda.synchronize() and Event.synchronize() fire no warning: never paired
    assert pairing.callback(sync_labels.DEVICE) is True and pairing.callback(sync_labels.EVENT) is True
    assert pairing.to_json() == {
        "stream": 4, "device": 1, "event": 1, "debug_mode_warning": 4, "unpaired_callbacks": 0, "unpaired_warnings": 0,
    }


def test_unpaired_signals_are_counted_as_the_cross_check():
    pairing = sync_labels.SyncSignalPairing()
    assert pairing.callback(sync_labels.STREAM) is True  # a stream sync the debug mode missed
    assert pairing.callback(sync_labels.DEVICE) is True
    assert pairing.to_json()["unpaired_callbacks"] == 1 and pairing.to_json()["unpaired_warnings"] == 0


# -- cuda backend: A/B statistics ---------------------------------------------------------
def test_step_durations_follow_the_clock_convention():
    ticks = [0.0, 10.0, 25.0, 45.0, 70.0, 100.0]  # counts 1..6
    window = SteadyWindow("optimizer", total=6, warmup=2)  # steps 2..4
    # optimizer clock: step k runs from the k-th to the (k+1)-th step() call
    assert ab_stats.step_durations(ticks, "optimizer", window) == [15.0, 20.0, 25.0]
    # batch clock: step k runs from fetching batch k (count k+1) to fetching batch k+1
    assert ab_stats.step_durations(ticks, "batches", window) == [20.0, 25.0, 30.0]
    assert ab_stats.step_durations(ticks, None, window) == []


def test_ab_compare_reports_cost_and_significance():
    original = [[10.0, 10.2, 9.8], [10.1, 10.1, 10.1], [9.9, 10.0, 10.0]]
    fixed = [[8.0, 8.1, 7.9], [8.0, 8.0, 8.0], [8.2, 8.1, 8.1]]
    comparison = ab_stats.compare(original, fixed)
    assert comparison.original.median_ms == 10.0 and comparison.fixed.median_ms == 8.0
    assert comparison.cost_ms_per_step == 2.0 and comparison.cost_pct == 20.0 and comparison.significant
    noisy = ab_stats.compare([[10.0], [12.0]], [[10.5], [11.0]])
    assert not noisy.significant
    assert ab_stats.compare([], fixed) is None


def test_ab_runs_alternate_original_and_fixed(monkeypatch):
    import argparse

    from torchsync_lint.verify import measure

    calls = []

    def fake_run(variant, script, script_args, args, launcher):
        calls.append(variant.path)
        if len(calls) == 3:  # the second original run fails
            return None, "", "a.py crashed"
        return [float(len(calls))], "cuda-events", ""

    monkeypatch.setattr(measure, "timed_run", fake_run)
    original, fixed = measure.Variant("original", "a.py", []), measure.Variant("whole fix", "a.fixed.py", [])
    timer = measure.run_rounds([original, fixed], types.SimpleNamespace(path="a.py"), [], argparse.Namespace(repeats=3), "cuda")
    assert calls == ["a.py", "a.fixed.py"] * 3 and timer == "cuda-events"
    assert original.runs == [[1.0], [5.0]] and fixed.runs == [[2.0], [4.0], [6.0]]
    assert original.failures == ["a.py crashed"]


# -- cuda backend: labelling a real sync --------------------------------------------------
@pytest.mark.parametrize(
    ("source", "op", "direction", "callee", "expected"),
    [
        ("stream", "aten::_local_scalar_dense", None, None, ev.SCALAR_READ),
        ("stream", "aten::_to_copy", "h2d", None, ev.H2D_BLOCKING),
        ("stream", "aten::_to_copy", "d2h", None, ev.D2H_COPY),
        ("stream", "aten::copy_", "h2d", None, ev.H2D_BLOCKING),
        ("stream", "aten::bincount", None, None, ev.BINCOUNT),
        ("stream", "aten::index", None, None, ev.DYNAMIC_SHAPE),
        ("stream", None, None, "synchronize", ev.EXPLICIT_SYNC),
        ("stream", None, None, None, ev.DEVICE_SYNC),
        ("device", None, None, None, ev.EXPLICIT_SYNC),
        ("event", "aten::add", None, None, ev.EXPLICIT_SYNC),
        ("stream", "aten::some_new_op", None, None, ev.DEVICE_SYNC),
        # seen on an H200 (docs/verification): torch.tensor(host, device=cuda) copies with no op
        # dispatched, so the harness's factory label is all that says why the host waited
        ("stream", sync_labels.factory_label("tensor"), "h2d", None, ev.H2D_BLOCKING),
        ("stream", sync_labels.factory_label("new_tensor"), "h2d", None, ev.H2D_BLOCKING),
        ("stream", "aten::allclose", None, None, ev.SCALAR_READ),
    ],
)
def test_classify_sync(source, op, direction, callee, expected):
    assert sync_labels.classify_sync(source, op, direction, callee)[0] == expected


def test_factory_labels_name_the_call():
    assert sync_labels.classify_sync("stream", sync_labels.factory_label("as_tensor"), "h2d")[1] == "torch.as_tensor(host data, device=cuda)"
    assert sync_labels.classify_sync("stream", sync_labels.factory_label("new_tensor"), "h2d")[1] == "Tensor.new_tensor(host data, device=cuda)"


class _Receiver:
    def __init__(self, is_cuda: bool) -> None:
        self.is_cuda = is_cuda


def _copies(name, args=(), **kwargs) -> bool:
    return sync_labels.copies_host_data_to_cuda(name, args, kwargs, {"tensor", "as_tensor"}, lambda d: d in ("cuda", "cuda:0", 0))


def test_a_factory_copies_to_cuda_where_its_device_or_its_receiver_says():
    assert _copies("tensor", ([1.0],), device="cuda") and not _copies("tensor", ([1.0],)) and not _copies("tensor", ([1.0],), device="cpu")
    assert not _copies("zeros", (3,), device="cuda")  # no host data copied
    # `cuda_t.new_tensor(data)`: the new tensor is on the receiver's device (a blocking copy)
    assert _copies("new_tensor", (_Receiver(True), [1.0]))
    assert not _copies("new_tensor", (_Receiver(False), [1.0]))
    assert not _copies("new_tensor", (_Receiver(True), [1.0]), device="cpu")  # a device given wins
    assert _copies("new_tensor", (_Receiver(False), [1.0]), device="cuda")
    assert _copies("new_tensor", (_Receiver(True), [1.0]), device=None)


def test_steps_holding_a_loop_start_are_not_steady():
    window = SteadyWindow(steady_state.OPTIMIZER, total=16, warmup=2, excluded=[0, 8])
    assert not window.contains(8) and window.contains(7) and window.contains(9)
    assert window.length == 12  # steps 2..14 minus step 8
    assert steady_state.loop_start_steps(steady_state.OPTIMIZER, [(0, 0), (8, 8)]) == [0, 8]
    assert steady_state.loop_start_steps(steady_state.BATCHES, [(0, 0), (0, 8)]) == [-1, 7]


def test_per_epoch_sync_is_not_runtime_only():
    window = SteadyWindow(steady_state.OPTIMIZER, total=16, warmup=2, excluded=[0, 8])
    per_epoch = events(40, ev.SCALAR_READ, steps=[8])
    assert match_script("f.py", [], per_epoch, window, "emulate") == []


def test_innermost_torch_function_skips_callback_plumbing():
    torch_dir = "/site/torch/"
    stack = [
        ("/repo/torchsync_lint/verify/cuda/harness.py", "on_sync"),
        ("/site/torch/_utils.py", "fire_callbacks"),
        ("/site/torch/cuda/_gpu_trace.py", "<lambda>"),
        ("/site/torch/cuda/streams.py", "synchronize"),
        ("/work/train.py", "<module>"),
    ]
    assert sync_labels.innermost_torch_function(stack, torch_dir) == "synchronize"
    assert sync_labels.innermost_torch_function(stack[:3] + stack[4:], torch_dir) is None


def test_syncs_per_step_counts_only_syncs_in_the_window():
    evts = events(1, ev.SCALAR_READ) + events(2, ev.BINCOUNT) + events(3, ev.DATALOADER_MAIN_PROCESS)
    from torchsync_lint.verify.matching import syncs_per_step

    assert syncs_per_step(evts, WINDOW) == 2.0
    assert syncs_per_step([], WINDOW) == 0.0


def test_same_result_tolerates_float_noise_only():
    from torchsync_lint.verify.fixed_variant import same_result

    assert same_result({"loss": 1.0000001, "tag": "a"}, {"loss": 1.0, "tag": "a"})
    assert not same_result({"loss": 1.01}, {"loss": 1.0})
    assert not same_result({"loss": 1.0}, {"loss": 1.0, "acc": 0.5})
    assert not same_result(None, {"loss": 1.0})


def test_compare_entry_fails_when_the_fix_syncs_more_or_does_not_run():
    from torchsync_lint.verify.fixed_variant import compare_entry

    script = scripts.Script("a.py", steps=6, warmup=1)
    original = runner.RunRecord("ok", events(3, ev.SCALAR_READ), "optimizer", 6, result={"loss": 1.0})
    better = runner.RunRecord("ok", [], "optimizer", 6, result={"loss": 1.0})
    worse = runner.RunRecord("ok", events(3, ev.SCALAR_READ) * 2, "optimizer", 6, result={"loss": 2.0})
    entry = compare_entry(script, "emulate", original, WINDOW, better, "/x/a.fixed.py")
    assert entry.status == "fixed-compared" and not entry.failed
    assert entry.detail == "a.fixed.py: syncs/step 1 -> 0; RESULT unchanged"
    entry = compare_entry(script, "emulate", original, WINDOW, worse, "/x/a.fixed.py")
    assert entry.failed and "syncs/step 1 -> 2" in entry.detail and "RESULT differs" in entry.detail
    crashed = runner.RunRecord("crashed", detail="ValueError: x")
    entry = compare_entry(script, "emulate", original, WINDOW, crashed, "/x/a.fixed.py")
    assert entry.status == "fixed-crashed" and entry.failed


def test_fixed_variant_falls_back_to_the_fixer_output(tmp_path):
    from torchsync_lint.verify.fixed_variant import fixed_variant
    from torchsync_lint.verify.scripts import Script

    script_path = tmp_path / "train.py"
    script_path.write_text(
        "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\n"
        "loader = DataLoader(ds, num_workers=2, pin_memory=True)\nfor x, y in loader:\n"
        "    x = x.to(device)\n    model(x).sum().backward()\n"
    )
    with fixed_variant(Script(str(script_path))) as (path, extra):  # no train.fixed.py beside it
        assert "x = x.to(device, non_blocking=True)" in open(path).read()
        assert extra == [str(tmp_path)]
    assert not os.path.exists(os.path.dirname(path))  # the fixer's copy is gone after the block


def test_a_thread_without_script_frames_gets_the_main_threads_line():
    """Autograd runs a CUDA backward on its own device thread, whose stack has no frame of the
    script: a sync there is reported at the line the main thread waits on (loss.backward())."""
    import inspect
    import threading

    from torchsync_lint.verify.frames import UserFrameFinder

    finder = UserFrameFinder(__file__)
    namespace: dict = {}
    probe = "def probe(finder, out, waiting, done):\n    waiting.wait()\n    out.append((finder.line(1), finder.line_or_main_thread(1)))\n    done.set()\n"
    exec(compile(probe, "<library>", "exec"), namespace)
    seen: list = []
    waiting, done = threading.Event(), threading.Event()
    worker = threading.Thread(target=namespace["probe"], args=(finder, seen, waiting, done))
    worker.start()
    expected = inspect.currentframe().f_lineno + 1
    waiting.set() or done.wait(10)  # the main thread stays on this line until the probe ran
    worker.join()
    assert seen == [(0, expected)]
    # on the main thread the fallback changes nothing
    assert finder.line_or_main_thread(1) == inspect.currentframe().f_lineno


def test_entry_json_round_trip():
    """Shards of one GPU session are merged from their JSON reports (benchmarks/verify_gpu_merge.py)."""
    from torchsync_lint.verify.matching import Entry, Evidence

    entry = Entry("f.py", 3, "TSL201", "confirmed", "cuda", [Evidence("scalar-read", "aten::_local_scalar_dense", 12, 2.0)],
                  "metric-update-nan-check", static=True, marker="expect", detail="d", cost_ms_per_step=0.5, cost_pct=4.0)
    assert Entry.from_json(entry.to_json()) == entry
    script_level = Entry("f.py", None, None, "profiled", "cuda")
    assert Entry.from_json(script_level.to_json()) == script_level


def test_gpu_merge_keeps_probes_and_prefers_measured_runs(tmp_path):
    """benchmarks/verify_gpu_merge.py: the confirmation shards and the label probes are merged;
    a script that was measured keeps its measured run's entries, not its confirmation run's."""
    import importlib.util

    from torchsync_lint.verify.matching import Entry
    from torchsync_lint.verify.report import render_json, render_markdown

    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "verify_gpu_merge.py"
    spec = importlib.util.spec_from_file_location("verify_gpu_merge", script)
    merge_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(merge_module)

    def write(name, entries, command):
        (tmp_path / f"{name}.json").write_text(render_json(entries))
        page = render_markdown(entries, sorted({e.path for e in entries}), "cuda", {"device": "GPU X", "command": command})
        (tmp_path / f"{name}.md").write_text(page)

    confirmed = Entry("fixtures/a.py", 3, "TSL101", "confirmed", "cuda")
    write("confirm_0", [confirmed, Entry("fixtures/b.py", 5, "TSL201", "confirmed", "cuda")], "verify a b")
    write("probes", [Entry("benchmarks/gpu_probes/p.py", 7, "TSL305", "confirmed", "cuda")], "verify probes")
    measured = Entry("fixtures/b.py", 5, "TSL201", "confirmed", "cuda", cost_ms_per_step=1.5, cost_pct=10.0)
    write("measure_b", [measured], "verify b --measure")

    entries, scripts, environment, commands = merge_module.merge(tmp_path)
    assert sorted((e.path, e.cost_ms_per_step) for e in entries) == [
        ("benchmarks/gpu_probes/p.py", None), ("fixtures/a.py", None), ("fixtures/b.py", 1.5)
    ]
    assert scripts == ["benchmarks/gpu_probes/p.py", "fixtures/a.py", "fixtures/b.py"]
    assert environment["device"] == "GPU X" and environment["command"] == "3 runs of benchmarks/verify_gpu.sh, listed below"
    assert commands == ["verify a b", "verify probes", "verify b --measure"]
