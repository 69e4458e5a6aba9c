"""``verify --measure``: what the whole fix saves per step, and what each finding costs.

Variants, each timed in fresh processes (the cuda harness's ``time`` mode: nothing but a
timing mark at each step-clock tick): the original, the whole fix (fixed_variant: the
``.fixed.py`` or the fixer's output), and the script with one fix applied at a time
(fix_isolation.py). ``--repeats N`` rounds run every variant once each, in turn, so that a drift
of the machine (clocks, temperature, a neighbour) hits all variants alike instead of biasing
one. A run contributes the median of its steady step times, a variant the median over its runs,
and the spread (max - min over runs) says whether a difference is a cost or noise
(ab_stats.py). A finding's cost is the original's step time minus that of the original with
its fix alone: "TSL201 at line 88: 4.1 ms/step, 9.7%, outside the spread".

On the cuda backend the marks are CUDA events. Under emulate there is no GPU: the variants run
on the CPU (CUDA hidden), timed by the host clock. Those are CPU times of a CPU run: a sync
costs nothing there and host work (decoding, workers) costs what it costs on this machine, so
the report says that they do not predict the GPU cost.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from torchsync_lint.verify import launch, runner
from torchsync_lint.verify.cuda import ab_stats
from torchsync_lint.verify.fix_isolation import Isolation, isolate, write_single
from torchsync_lint.verify.matching import CONFIRMED, Entry
from torchsync_lint.verify.scripts import Script

TIME_HARNESS = "torchsync_lint.verify.cuda.harness"
CPU_CAVEAT = "CPU times of a CPU run (emulate, host clock): they do not predict the GPU cost"
DEFAULT_REPEATS = 5


@dataclass
class Variant:
    label: str  # "original", "whole fix", "TSL201 at line 88"
    path: str
    sys_path: list[str]
    findings: tuple[tuple[int, str], ...] = ()  # the findings this variant's one fix removes
    runs: list[list[float]] = field(default_factory=list)  # steady step times (ms) of each run
    failures: list[str] = field(default_factory=list)
    shares_whole: bool = False  # this one fix is the whole fix: its runs are the whole fix's


@contextlib.contextmanager
def timing_launcher(backend: str) -> Iterator[launch.FreshLauncher | launch.ForkServer | None]:
    """How the timed runs start. On the GPU, each from a new interpreter with the user's
    settings (runner's default). Under emulate, on the CPU with CUDA hidden, even on a machine
    with a GPU (the numbers are labelled CPU times, and they must be), forked from a server
    that has imported torch where that works: each run is still a fresh process of its own,
    and the interpreter's start-up is not what a step costs."""
    if backend == "cuda":
        yield None
        return
    env = {"CUDA_VISIBLE_DEVICES": ""}
    launcher: launch.FreshLauncher | launch.ForkServer = launch.FreshLauncher(env)
    if os.environ.get("TORCHSYNC_VERIFY_FORK", "1") != "0" and launch.ForkServer.available():
        try:
            launcher = launch.ForkServer(["torch", "torch.utils.data", TIME_HARNESS], env)
        except OSError:
            pass
    try:
        yield launcher
    finally:
        launcher.close()


def timed_run(
    variant: Variant, script: Script, script_args: list[str], args: argparse.Namespace, launcher: launch.FreshLauncher | launch.ForkServer | None
) -> tuple[list[float] | None, str, str]:
    """(steady step times in ms or None, the timer, why it failed) of one fresh-process run."""
    harness_args = ["--mode", "time"] + runner.sys_path_args(variant.sys_path)
    run = runner.run_harness(
        TIME_HARNESS, variant.path, script_args, args.timeout, harness_args, require_result=False, options=script.options, launcher=launcher
    )
    if run.status != runner.OK:
        last = (run.detail or "").strip().splitlines()[-1:]
        return None, "", f"{os.path.basename(variant.path)} {run.status}" + (f": {last[0]}" if last else "")
    ticks = run.extra.get("tick_ms", {}).get(run.step_basis or "", [])
    return ab_stats.step_durations(ticks, run.step_basis, run.window(script.warmup)), str(run.extra.get("timer", "")), ""


def run_rounds(variants: list[Variant], script: Script, script_args: list[str], args: argparse.Namespace, backend: str) -> str:
    """``--repeats`` rounds, each variant once per round, in turn; returns the timer used
    ("cuda-events", or "host-clock" on the CPU)."""
    timers: list[str] = []
    with timing_launcher(backend) as launcher:
        for _ in range(repeats(args)):
            for variant in variants:
                durations, timer, failure = timed_run(variant, script, script_args, args, launcher)
                if durations:
                    variant.runs.append(durations)
                    timers.append(timer)
                else:
                    variant.failures.append(failure or "no steady-state step times (too few steps?)")
    return timers[0] if timers else ""


def repeats(args: argparse.Namespace) -> int:
    return max(1, getattr(args, "repeats", DEFAULT_REPEATS) or 1)


def sentence(label: str, comparison: ab_stats.Comparison) -> str:
    """"TSL201 at line 88: 4.1 ms/step, 9.7%, outside the spread"."""
    if min(comparison.original.runs, comparison.fixed.runs) < 2:
        where = "no spread (1 run)"
    else:
        where = ("outside" if comparison.significant else "within") + " the spread"
    return f"{label}: {comparison.cost_ms_per_step:.3f} ms/step, {comparison.cost_pct:.1f}%, {where}"


def _timing_text(comparison: ab_stats.Comparison, fixed_label: str) -> str:
    data = comparison.to_json()
    return (
        f"original {data['original_ms_per_step']:.3f} ms/step (spread {data['original_spread_ms']:.3f}), "
        f"{fixed_label} {data['fixed_ms_per_step']:.3f} ms/step (spread {data['fixed_spread_ms']:.3f}), "
        f"{data['runs']} runs each"
    )


def measure_script(
    script: Script,
    script_args: list[str],
    args: argparse.Namespace,
    backend: str,
    entries: list[Entry],
    whole: tuple[str, list[str]] | None,
    syncs: str = "",
) -> Entry:
    """The ``measured`` entry of ``script`` (or ``not-measured``); the finding entries in
    ``entries`` whose fix could be applied alone get their own cost (``cost_ms_per_step``,
    ``cost_pct``, a sentence in ``detail``). ``syncs``: "syncs/step A -> B", when known."""
    if whole is None:
        return Entry(script.path, None, None, "not-measured", backend, detail="no .fixed.py beside it and no fixer output")
    isolation = _isolation(script)
    with tempfile.TemporaryDirectory(prefix="torchsync-single-") as directory:
        timed, singles = _variants(script, whole, isolation, directory)
        timer = run_rounds(timed, script, script_args, args, backend)
    original, fixed = timed[0], timed[1]
    comparison = ab_stats.compare(original.runs, fixed.runs)
    if comparison is None:
        why = "; ".join(dict.fromkeys(original.failures + fixed.failures)) or "no steady-state step times (too few steps?)"
        return Entry(script.path, None, None, "not-measured", backend, detail=why)
    lines = [sentence(f"whole fix ({os.path.basename(whole[0])})", comparison), _timing_text(comparison, "fixed")]
    findings = []
    for single in singles:
        source = fixed if single.shares_whole else single
        one = ab_stats.compare(original.runs, source.runs)
        if one is None:
            lines.append(f"{single.label}: not measured ({'; '.join(dict.fromkeys(source.failures)) or 'no step times'})")
            continue
        lines.append(sentence(single.label, one))
        findings.append({"findings": [{"line": line, "code": code} for line, code in single.findings], **one.to_json()})
        _attach(entries, script.path, single, one)
    if not singles:
        _attach_to_the_only_finding(entries, script.path, comparison)
    if isolation.unfixable:
        lines.append("not isolated (no automatic fix): " + ", ".join(f"{code} at line {line}" for line, code in isolation.unfixable))
    if syncs:
        lines.append(syncs)
    cpu = timer != "cuda-events"
    if cpu:
        lines.append(CPU_CAVEAT)
    entry = Entry(
        script.path, None, None, "measured", backend, detail="; ".join(lines),
        cost_ms_per_step=comparison.cost_ms_per_step, cost_pct=comparison.cost_pct,
    )
    entry.measurement = {
        "timer": timer or None,
        "cpu_times": cpu,
        "repeats": repeats(args),
        "whole": {"variant": os.path.basename(whole[0]), **comparison.to_json()},
        "findings": findings,
        "not_isolated": [{"line": line, "code": code} for line, code in isolation.unfixable],
    }
    return entry


def _isolation(script: Script) -> Isolation:
    from torchsync_lint import api
    from torchsync_lint.config import ConfigError

    try:
        return isolate(script.path, api.config_for([script.path]))
    except (ConfigError, OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return Isolation([], [])  # `--fix` would refuse too; the whole fix is still measured


def _variants(script: Script, whole: tuple[str, list[str]], isolation: Isolation, directory: str) -> tuple[list[Variant], list[Variant]]:
    """(the variants to time: the original, the whole fix, each fix alone; the fixes alone, in
    order). A fix alone that is the whole fix (the same bytes, no imported module fixed
    besides) is not timed twice: it shares the whole fix's runs."""
    whole_path, whole_sys_path = whole
    timed = [Variant("original", script.path, []), Variant("whole fix", whole_path, list(whole_sys_path))]
    modules = getattr(whole, "modules", ())
    with open(whole_path, "rb") as handle:
        whole_bytes = handle.read()
    singles = []
    for index, fix in enumerate(isolation.fixes):
        if fix.source == whole_bytes and not modules:
            singles.append(Variant(fix.label, whole_path, list(whole_sys_path), fix.findings, shares_whole=True))
            continue
        written = write_single(fix, script, os.path.join(directory, f"fix-{index}"))
        timed.append(Variant(fix.label, written.path, list(written.sys_path), fix.findings))
        singles.append(timed[-1])
    return timed, singles


def _attach_to_the_only_finding(entries: list[Entry], path: str, comparison: ab_stats.Comparison) -> None:
    """No fix could be applied alone (a hand-written ``.fixed.py``): the whole fix's cost
    belongs to a finding only when the script has exactly one confirmed finding."""
    confirmed = [e for e in entries if e.path == path and e.status == CONFIRMED and e.code]
    if len(confirmed) == 1:
        confirmed[0].cost_ms_per_step = comparison.cost_ms_per_step
        confirmed[0].cost_pct = comparison.cost_pct


def _attach(entries: list[Entry], path: str, single: Variant, comparison: ab_stats.Comparison) -> None:
    """The cost of ``single``'s fix on the confirmed entries of the findings it removes."""
    keys = set(single.findings)
    for entry in entries:
        if entry.path == path and entry.status == CONFIRMED and (entry.line, entry.code) in keys:
            entry.cost_ms_per_step = comparison.cost_ms_per_step
            entry.cost_pct = comparison.cost_pct
            text = sentence(f"fixed alone ({single.label})", comparison) + "; " + _timing_text(comparison, "with this fix")
            entry.detail = f"{entry.detail}; {text}" if entry.detail else text
