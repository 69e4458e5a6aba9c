"""Parent side of the cuda backend: run the harness passes and turn them into entries."""

from __future__ import annotations

import argparse
import os
import re
import tempfile

from torchsync_lint.verify import measure, runner
from torchsync_lint.verify.fixed_variant import format_rate
from torchsync_lint.verify.matching import Entry, Evidence, syncs_per_step
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
    """The A/B against ``variant`` (fixed_variant(script): path and extra sys.path), and each
    fix alone (measure.py), with the fixed version's syncs per step beside the times."""
    if variant is None:
        return measure.measure_script(script, script_args, args, "cuda", entries, None)
    fixed_path, extra_path = variant
    fixed_syncs = _fixed_syncs_per_step(fixed_path, script_args, extra_path, script, args)
    syncs = f"syncs/step {format_rate(original_syncs)} -> {format_rate(fixed_syncs)}"
    return measure.measure_script(script, script_args, args, "cuda", entries, variant, syncs)


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
