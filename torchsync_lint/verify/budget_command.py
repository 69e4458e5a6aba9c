"""``torchsync-lint verify [SCRIPT...] --budget FILE [--update-budget]``: replay each script,
count its steady-state syncs per step by line and kind (budget.py), and compare them with the
budget file (or rewrite it). Exit 0 within budget, 1 when syncs rose, 2 for bad input: a
missing or malformed budget, a script that crashes or never reaches a steady step, a budget
written for other arguments or another backend.

The runs are the verifier's (command.py: the same launcher, containment, timeouts and
interrupt handling); nothing is linted, since the budget needs only the runtime evidence.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import traceback

from torchsync_lint.atomic import WriteError
from torchsync_lint.verify import budget_file, budget_report, budget_update, runner, scripts as script_files
from torchsync_lint.verify.budget import (
    ADDED,
    ERROR,
    FELL,
    NOT_RUN,
    ROSE,
    SKIPPED,
    UNCHANGED,
    UPDATED,
    WITHIN,
    BudgetFile,
    BudgetReport,
    ScriptBudget,
    ScriptResult,
    compare,
    measure,
    script_key,
    total_of,
)
from torchsync_lint.verify.budget_file import BudgetError, budget_root
from torchsync_lint.verify.command import (
    BackendUnavailable,
    RunContext,
    _fixture_scale,
    _interrupt_handlers,
    _jobs,
    _launcher,
    _replay,
    resolve_backend,
    write_outputs,
)
from torchsync_lint.verify.progress import Progress


class UsageError(Exception):
    """Bad input found before any script ran (exit status 2)."""


def run_budget(args: argparse.Namespace) -> int:
    try:
        backend = resolve_backend(args.backend)
        budget, root, found = _inputs(args)
    except (BackendUnavailable, BudgetError, UsageError) as exc:
        print(f"torchsync-lint verify: {exc}", file=sys.stderr)
        return 2
    results: dict[str, ScriptResult] = {}
    runnable: dict[str, script_files.Script] = {}
    for path in found:  # what can be told before anything runs (and starts no process)
        key = script_key(path, root)
        planned = plan_script(args, backend, path, key, budget.scripts.get(key))
        if isinstance(planned, ScriptResult):
            results[path] = planned
        else:
            runnable[path] = planned
    context = RunContext(args, backend, progress=Progress(sys.stderr, len(runnable)))
    interrupted: list[int] = []
    try:
        if runnable:
            with _interrupt_handlers(context.cancel, interrupted), _fixture_scale(args), _launcher(context, list(runnable)) as context.launcher:
                _check_all(context, budget, root, runnable, results)
    finally:
        context.progress.close()
    ordered = [results.get(path) or ScriptResult(script_key(path, root), NOT_RUN, "the verifier was interrupted") for path in found]
    report = BudgetReport(args.budget, backend, bool(args.update_budget), ordered)
    if report.update and not interrupted and report.exit_code == 0:
        # All or nothing: a budget half-updated by a run with errors would hide them.
        try:
            report.written = budget_update.update(args.budget, _measured(ordered))
        except WriteError as exc:  # the budget is as it was; the report still says what ran
            report.write_error = str(exc)
    _write_outputs(args, report)
    if interrupted:
        return 128 + interrupted[0]
    return report.exit_code


def _inputs(args: argparse.Namespace) -> tuple[BudgetFile, str, list[str]]:
    """The budget (a new, empty one for --update-budget when the file does not exist yet), its
    root, and the scripts to run: those named, else every script of the budget."""
    for option, given in (("--measure", args.measure), ("--compare-fixed", getattr(args, "compare_fixed", False)), ("--format markdown", args.format == "markdown")):
        if given:
            raise UsageError(f"{option} does not go with --budget (the budget counts syncs; formats: text, json, junit, github, sarif)")
    if args.steps is not None and args.steps < 1:
        raise UsageError("--steps must be at least 1")
    root = budget_root(args.budget)
    if args.update_budget and not os.path.lexists(args.budget):
        budget = BudgetFile(args.budget)
    else:
        budget = budget_file.load(args.budget)
    if args.paths:
        found, missing, empty = script_files.discover(args.paths)
        if missing:
            raise UsageError(f"no such file or directory: {', '.join(missing)}")
        if empty:
            raise UsageError(f"no runnable script in {', '.join(empty)} (a directory contributes its fixture scripts; name a script to run it)")
        outside = [path for path in found if not inside(path, root)]
        if outside:
            raise UsageError(f"{', '.join(outside)}: outside the project root {root} of {args.budget} (a budget holds the scripts of its own project); nothing was run")
    else:
        found = [os.path.join(root, *name.split("/")) for name in sorted(budget.scripts)]
        if not found:
            raise UsageError(f"{args.budget} budgets no script yet: name the scripts to run (verify train.py --budget {args.budget} --update-budget)")
        # The keys were checked on load (no `..`, not absolute); a symlink may still lead out.
        outside = [name for name, path in zip(sorted(budget.scripts), found) if not inside(path, root)]
        if outside:
            raise UsageError(f"{args.budget}: script key(s) {', '.join(outside)} resolve outside the project root {root} (through a symlink); nothing was run")
        absent = [path for path in found if not os.path.isfile(path)]
        if absent:
            raise UsageError(f"scripts of {args.budget} not found under {root}: {', '.join(absent)} (restore them, or delete their entries from the budget)")
    return budget, root, found


def inside(path: str, root: str) -> bool:
    """Whether ``path``, symlinks resolved, is in the directory ``root`` (resolved too)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    try:
        return os.path.commonpath([real, top]) == top
    except ValueError:  # another drive (Windows)
        return False


def _check_all(context: RunContext, budget: BudgetFile, root: str, runnable: dict[str, script_files.Script], results: dict[str, ScriptResult]) -> None:
    def one(path: str) -> None:
        key = script_key(path, root)
        if context.cancel.is_set():
            results[path] = ScriptResult(key, NOT_RUN, "the verifier was interrupted")
            return
        try:
            result = run_script(context, runnable[path], key, budget.scripts.get(key), root)
        except Exception as exc:  # noqa: BLE001 - one script's problem must not lose the others' results
            result = ScriptResult(key, ERROR, f"internal error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        context.progress.finished(path, result.status)
        results[path] = result

    with concurrent.futures.ThreadPoolExecutor(max_workers=_jobs(context)) as pool:
        list(pool.map(one, runnable))


def plan_script(args: argparse.Namespace, backend: str, path: str, key: str, entry: ScriptBudget | None) -> script_files.Script | ScriptResult:
    """How to run one script (the budget's arguments and steps unless given), or the result
    that makes running it pointless: not in the budget, written for other arguments or
    another backend, a requirement missing."""
    update = bool(args.update_budget)
    given = list(getattr(args, "script_args", None) or [])
    user_args = given or (entry.args if entry is not None else [])
    steps = args.steps if args.steps is not None else (entry.steps if entry is not None else None)
    warmup = args.warmup if args.warmup is not None else (entry.warmup if entry is not None else None)
    script = script_files.load_script(path, steps, warmup, user_args, getattr(args, "cwd", None), getattr(args, "sys_path", None))
    missing = script.missing_requirements
    if missing:  # first: a script this machine cannot run is skipped, budgeted or not
        return ScriptResult(key, SKIPPED, f"requires {', '.join(missing)} (not importable)", budget=entry)
    if entry is None and not update:
        return ScriptResult(key, ERROR, f"not in the budget {args.budget}: add it with --update-budget")
    if entry is not None and not update:
        if given and given != entry.args:
            return ScriptResult(key, ERROR, f"the budget was written for other arguments: {budget_report.args_text(entry.args)}, this run: {budget_report.args_text(given)} "
                                "(run with the budget's arguments, or rewrite it with --update-budget)", budget=entry)
        if entry.backend != backend:
            return ScriptResult(key, ERROR, f"the budget was written on the {entry.backend} backend, this run uses {backend} "
                                f"(use --backend {entry.backend}, or a budget file per backend)", budget=entry)
    return script


def run_script(context: RunContext, script: script_files.Script, key: str, entry: ScriptBudget | None, root: str) -> ScriptResult:
    """Replay one script, count its syncs, and compare them with its budget ``entry``."""
    context.progress.started(script.path, script.expected_steps)
    run = _replay(context, script)
    problem = _run_problem(run, script)
    if problem:
        return ScriptResult(key, ERROR, problem, budget=entry)
    window = run.window(script.warmup)
    seen = measure(run.events, run.extra["event_sites"], run.extra["sites"], window, root)
    measured = ScriptBudget(
        path=key, args=script.user_args, steps=script.steps, warmup=script.warmup, window=seen.window, backend=context.backend,
        tolerance=entry.tolerance if entry is not None else 0, total=total_of(seen.lines), lines=seen.lines,
    )
    comparison = compare(entry, seen) if entry is not None else None
    if context.args.update_budget:
        status = ADDED if entry is None else (UNCHANGED if _same_entry(entry, measured) else UPDATED)
    else:
        status = ROSE if comparison.rose else FELL if comparison.fell else WITHIN  # type: ignore[union-attr]
    return ScriptResult(key, status, "", comparison, entry, measured)


def _run_problem(run: runner.RunRecord, script: script_files.Script) -> str | None:
    """Why this run cannot be compared with a budget, or None."""
    if run.status != runner.OK:
        last = (run.detail or "").strip().splitlines()
        words = _STATUS_WORDS.get(run.status, run.status)
        return (f"the script {words}: " if words else "the script ") + (last[-1] if last else "no detail") + (
            "" if run.status != runner.TIMEOUT else " (raise --timeout, or run fewer --steps)"
        )
    if "sites" not in run.extra or "event_sites" not in run.extra:
        return "the harness recorded no call sites (a harness of another torchsync-lint version?)"
    window = run.window(script.warmup)
    if run.step_basis is None or window.length < 1:
        counted = "no optimizer step and no DataLoader batch" if run.step_basis is None else f"{run.total_steps} step(s), warm-up {script.warmup}"
        return (f"never reached a steady-state step ({counted}): the budget counts syncs per training step; "
                "pass the arguments that make it train (after `--`), or more --steps")
    return None


# How a failed run reads after "the script " (an early exit's detail says it: "exited early ...").
_STATUS_WORDS = {runner.TIMEOUT: "timed out", runner.EARLY_EXIT: "", runner.INTERRUPTED: "was interrupted"}


def _same_entry(old: ScriptBudget, new: ScriptBudget) -> bool:
    probe = BudgetFile("", {"x": old}), BudgetFile("", {"x": new})
    return budget_file.dumps(probe[0]) == budget_file.dumps(probe[1])


def _measured(results: list[ScriptResult]) -> dict[str, ScriptBudget]:
    """The entries this run measured: they replace theirs in the budget (budget_update.py
    merges them into the file as it is when written); scripts that were not run, were
    skipped or failed keep their entries."""
    return {result.path: result.measured for result in results if result.measured is not None}


def _write_outputs(args: argparse.Namespace, report: BudgetReport) -> None:
    write_outputs(args, budget_report.render(report, args.format), lambda: budget_report.render(report, "json"))
