"""Parent side of the cuda backend: run the harness passes and turn them into entries."""

from __future__ import annotations

import argparse
import os
import re
import tempfile

from torchsync_lint.verify import runner
from torchsync_lint.verify.cuda import ab_stats
from torchsync_lint.verify.fixed_variant import format_rate
from torchsync_lint.verify.matching import CONFIRMED, Entry, Evidence, syncs_per_step
from torchsync_lint.verify.scripts import Script
from torchsync_lint.verify.steady_state import SteadyWindow

HARNESS = "torchsync_lint.verify.cuda.harness"


def attribute(
    path: str,
    script_args: list[str],
    timeout: float,
    require_result: bool = True,
    extra_sys_path: list[str] | None = None,
    **run: object,
) -> runner.RunRecord:
    """The attribution pass; ``run``: runner.run_harness's options/progress/cancel."""
    harness_args = ["--mode", "attribute"] + runner.sys_path_args(extra_sys_path)
    return runner.run_harness(HARNESS, path, script_args, timeout, harness_args, require_result, **run)


def _trace_path(trace_dir: str, script_path: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.normpath(script_path).lstrip("./"))
    return os.path.join(trace_dir, stem + ".trace.json")


def profile_entry(script: Script, script_args: list[str], args: argparse.Namespace) -> Entry:
    trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="torchsync-traces-")
    trace_path = _trace_path(trace_dir, script.path)
    run = runner.run_harness(
        HARNESS,
        script.path,
        script_args,
        args.timeout,
        ["--mode", "profile", "--trace", trace_path, "--warmup", str(script.warmup)],
        require_result=script.is_fixture,
        options=script.options,
    )
    if run.status != runner.OK:
        # The attribution pass already passed; a profiler failure is reported, not fatal.
        return Entry(script.path, None, None, "profile-" + run.status, "cuda", detail=run.detail)
    summary = run.extra.get("profile", {})
    counts = summary.get("counts", {})
    evidence = [Evidence("profiler", name, counts.get(name, 0), per_step) for name, per_step in summary.get("per_step", {}).items()]
    blocked = summary.get("blocked_us_per_step")
    detail = f"trace {trace_path}" + ("" if blocked is None else f"; host blocked in sync calls {blocked:g} us/step")
    return Entry(script.path, None, None, "profiled", "cuda", evidence, detail=detail)


def _timed_run(path: str, script_args: list[str], extra_path: list[str], script: Script, args: argparse.Namespace) -> list[float] | None:
    """Steady-state step times (ms) of one fresh-process run; None when the run failed."""
    harness_args = ["--mode", "time"] + runner.sys_path_args(extra_path)
    run = runner.run_harness(HARNESS, path, script_args, args.timeout, harness_args, require_result=False, options=script.options)
    if run.status != runner.OK:
        return None
    window = run.window(script.warmup)
    ticks = run.extra.get("tick_ms", {}).get(run.step_basis or "", [])
    return ab_stats.step_durations(ticks, run.step_basis, window)


def _interleaved_runs(
    script: Script, script_args: list[str], fixed_path: str, extra_path: list[str], args: argparse.Namespace
) -> tuple[list[list[float]], list[list[float]]]:
    """``--repeats`` runs of each variant, alternating original and fixed, so that a drift of
    the machine (clocks, temperature, a neighbour) hits both alike instead of biasing one."""
    original: list[list[float]] = []
    fixed: list[list[float]] = []
    for _ in range(max(1, args.repeats)):
        for runs, path, extra in ((original, script.path, []), (fixed, fixed_path, extra_path)):
            durations = _timed_run(path, script_args, extra, script, args)
            if durations is not None:
                runs.append(durations)
    return original, fixed


def _fixed_syncs_per_step(fixed_path: str, script_args: list[str], extra_path: list[str], script: Script, args: argparse.Namespace) -> float | None:
    run = attribute(fixed_path, script_args, args.timeout, require_result=False, extra_sys_path=extra_path, options=script.options)
    if run.status != runner.OK:
        return None
    return syncs_per_step(run.events, run.window(script.warmup))


def measure_entry(
    script: Script,
    script_args: list[str],
    args: argparse.Namespace,
    entries: list[Entry],
    original_syncs: float | None,
    variant: tuple[str, list[str]] | None,
) -> Entry:
    """The A/B against ``variant`` (fixed_variant(script): path and extra sys.path)."""
    if variant is None:
        return Entry(script.path, None, None, "not-measured", "cuda", detail="no .fixed.py beside it and no fixer output")
    fixed_path, extra_path = variant
    fixed_syncs = _fixed_syncs_per_step(fixed_path, script_args, extra_path, script, args)
    comparison = ab_stats.compare(*_interleaved_runs(script, script_args, fixed_path, extra_path, args))
    if comparison is None:
        return Entry(script.path, None, None, "not-measured", "cuda", detail="no steady-state step times (too few steps?)")
    confirmed = [e for e in entries if e.status == CONFIRMED and e.code]
    # The A/B removes every fixed hazard at once: its cost belongs to a single finding only
    # when there is exactly one; otherwise it is reported on the script entry alone.
    if len(confirmed) == 1:
        confirmed[0].cost_ms_per_step = comparison.cost_ms_per_step
        confirmed[0].cost_pct = comparison.cost_pct
    data = comparison.to_json()
    detail = (
        f"original {data['original_ms_per_step']:.3f} ms/step (spread {data['original_spread_ms']:.3f}), "
        f"fixed {data['fixed_ms_per_step']:.3f} ms/step (spread {data['fixed_spread_ms']:.3f}), "
        f"{data['runs']} runs each, vs {os.path.basename(fixed_path)}"
        + ("" if comparison.significant else "; difference within run-to-run spread")
        + f"; syncs/step {format_rate(original_syncs)} -> {format_rate(fixed_syncs)}"
    )
    return Entry(
        script.path,
        None,
        None,
        "measured",
        "cuda",
        detail=detail,
        cost_ms_per_step=comparison.cost_ms_per_step,
        cost_pct=comparison.cost_pct,
    )


def profile_and_measure(
    script: Script,
    script_args: list[str],
    args: argparse.Namespace,
    entries: list[Entry],
    run: runner.RunRecord,
    window: SteadyWindow,
    variant: tuple[str, list[str]] | None,
) -> list[Entry]:
    """The profiler pass, and with --measure the A/B against ``variant``, after the
    attribution pass ``run``."""
    profiled = profile_entry(script, script_args, args)
    signals = run.extra.get("sync_signals")
    if signals:
        # The attribution pass's cross-check: each stream sync should have given both signals.
        profiled.detail = (profiled.detail or "") + (
            f"; sync signals: {signals['stream']} stream / {signals['device']} device / {signals['event']} event callbacks, "
            f"{signals['debug_mode_warning']} sync-debug warnings, unpaired {signals['unpaired_callbacks']} callbacks / "
            f"{signals['unpaired_warnings']} warnings"
        )
    extra = [profiled]
    if args.measure:
        extra.append(measure_entry(script, script_args, args, entries, syncs_per_step(run.events, window), variant))
    return extra
