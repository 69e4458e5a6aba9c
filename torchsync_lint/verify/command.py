"""``torchsync-lint verify``: lint each script, replay it, match, report, exit status."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import tokenize
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from torchsync_lint.verify import containment, launch, runner, scripts as script_files
from torchsync_lint.verify.fixed_variant import compare_entry, fixed_variant
from torchsync_lint.verify.matching import Entry, Expectation, match_script, merge_expectations
from torchsync_lint.verify.progress import Progress
from torchsync_lint.verify.report import render

EMULATE_HARNESS = "torchsync_lint.verify.emulate.harness"
# What every emulated run imports: loaded once by the fork server. torch._dynamo is imported
# by the first TorchDispatchMode call; torchmetrics is skipped where it is not installed.
EMULATE_PRELOAD = ["torch", "torch.utils.data", "torch._dynamo", "torchmetrics", EMULATE_HARNESS,
                   "torchsync_lint.verify.emulate.patches", "torchsync_lint.verify.emulate.virtual_cuda"]


def resolve_backend(requested: str) -> str:
    if requested == "emulate":
        return requested
    import torch  # the verifier is the only part of torchsync-lint that may import torch

    if requested == "cuda" and not torch.cuda.is_available():
        # Without a GPU the cuda harness still runs (it is tested that way), but its sync
        # hooks never fire and its step times are host-clock times of a CPU run: numbers
        # that look like GPU measurements and are not.
        raise BackendUnavailable("the cuda backend needs a CUDA GPU and torch.cuda.is_available() is False here; use --backend emulate")
    return "cuda" if torch.cuda.is_available() else "emulate"


class BackendUnavailable(Exception):
    pass


def rule_metadata() -> tuple[dict[str, bool] | None, dict[str, str]]:
    """(code -> runtime_observable, code -> name) from the rule registry, if it can be loaded."""
    try:
        from torchsync_lint.rule import load_rules
    except ImportError:
        return None, {}
    rules = load_rules()
    return (
        {code: bool(getattr(cls, "runtime_observable", True)) for code, cls in rules.items()},
        {code: getattr(cls, "name", "") for code, cls in rules.items()},
    )


def static_expectations(path: str, names: dict[str, str]) -> tuple[list[Expectation], str | None]:
    """Findings of the linter and the script's inline markers. Returns (expectations, lint error)."""
    from torchsync_lint.markers import read_markers

    findings: list[Expectation] = []
    error = None
    try:
        from torchsync_lint.api import lint_with_callers

        # The project view's findings too: a helper's sync that `check` reports in utils.py is
        # looked for at each line of the script that calls towards it, where the runtime
        # attributes the sync (the innermost frame in the script), and reported at utils.py's
        # line, where `check` reports it (``origin``).
        result, reached = lint_with_callers(path)
        findings = [Expectation(f.line, f.code, f.name, f.message, static=True) for f in result.findings]
        findings += [
            Expectation(line, f.code, f.name, f.message, static=True, origin=(_shown_like(f.path, path), f.line))
            for f, lines in reached
            for line in lines
        ]
        if result.error is not None:
            error = f"{result.error.code}: {result.error.message}"
    except ImportError as exc:  # the static engine is optional for the verifier
        error = f"static engine unavailable ({exc})"
    except Exception as exc:  # noqa: BLE001 - a linter bug must not stop the runtime check
        error = f"static engine failed: {type(exc).__name__}: {exc}"
    try:
        markers = [
            Expectation(m.line, m.code if m.kind == "expect" else None, names.get(m.code or "", ""), getattr(m, "note", ""), marker=True)
            for m in read_markers(path)
        ]
    except (SyntaxError, tokenize.TokenError, UnicodeDecodeError, OSError) as exc:  # the replay will say more
        markers = []
        error = error or f"markers unreadable: {exc}"
    return merge_expectations(findings, markers), error


def _shown_like(module: str, script: str) -> str:
    """A module's path written as the script's is: absolute for an absolute script path, else
    relative to the working directory (the project view reports it so)."""
    return os.path.abspath(module) if os.path.isabs(script) else os.path.relpath(os.path.abspath(module))


def _script_entry(path: str, backend: str, status: str, detail: str, failed: bool) -> Entry:
    return Entry(path, None, None, status, backend, failed=failed, detail=detail)


@dataclass
class RunContext:
    """What every script's verification shares: the parsed arguments, the rule tables, and
    the machinery of this run (the fork server, the progress display, the cancel flag)."""

    args: argparse.Namespace
    backend: str
    observable: dict[str, bool] | None = None
    names: dict[str, str] = field(default_factory=dict)
    launcher: launch.FreshLauncher | launch.ForkServer | None = None
    progress: Progress | None = None
    cancel: threading.Event = field(default_factory=threading.Event)


def _replay(context: RunContext, script: script_files.Script, path: str | None = None, extra_sys_path: list[str] | None = None) -> runner.RunRecord:
    """The backend's attribution run of one script (or of its fixed version ``path``)."""
    options = script.options
    if extra_sys_path:
        options = dataclasses.replace(options, sys_path=[*extra_sys_path, *options.sys_path])
    path = path or script.path
    kwargs = {"options": options, "cancel": context.cancel, "progress": _progress_callback(context, script)}
    if context.backend == "cuda":
        from torchsync_lint.verify.cuda import backend as cuda_backend

        return cuda_backend.attribute(path, script.args, context.args.timeout, require_result=script.is_fixture, **kwargs)
    return runner.run_harness(
        EMULATE_HARNESS, path, script.args, context.args.timeout, require_result=script.is_fixture, launcher=context.launcher, **kwargs
    )


def _progress_callback(context: RunContext, script: script_files.Script) -> runner.Progress | None:
    display = context.progress
    if display is None or not display.enabled:
        return None
    return lambda elapsed, steps: display.step(script.path, steps)


def verify_script(script: script_files.Script, context: RunContext) -> list[Entry]:
    backend, args = context.backend, context.args
    missing = script.missing_requirements
    if missing:
        return [_script_entry(script.path, backend, "skipped", f"requires {', '.join(missing)} (not importable)", False)]
    expectations, lint_error = static_expectations(script.path, context.names)
    entries: list[Entry] = []
    if lint_error:
        entries.append(_script_entry(script.path, backend, "lint-error", lint_error, False))

    run = _replay(context, script)
    if run.status != runner.OK:
        entries.append(_script_entry(script.path, backend, run.status, run.detail, True))
        if run.status not in (runner.TIMEOUT, runner.INTERRUPTED) or not (run.events or run.total_steps):
            return entries
        # Stopped at the deadline or interrupted, and the harness wrote what it had: keep that evidence.
    elif run.notes:
        status = "stopped" if run.stopped == runner.STOPPED_BY_STEPS else "note"
        entries.append(_script_entry(script.path, backend, status, "; ".join(run.notes), False))

    window = run.window(script.warmup)
    entries += match_script(script.path, expectations, run.events, window, backend, context.observable)
    if run.status != runner.OK:
        return entries

    # The fixed version (a *.fixed.py, else the fixer's output in a temporary folder, gone
    # after this block), made once for --compare-fixed and --measure alike.
    compare = getattr(args, "compare_fixed", False)
    measure = getattr(args, "measure", False)
    with fixed_variant(script) if compare or measure else contextlib.nullcontext() as variant:
        fixed_run = None
        if compare and variant is not None:
            fixed_path, extra_path = variant
            fixed_run = _replay(context, script, fixed_path, extra_path)
            entries.append(compare_entry(script, backend, run, window, fixed_run, fixed_path, variant.modules))

        if backend == "cuda":
            from torchsync_lint.verify.cuda import backend as cuda_backend

            entries += cuda_backend.profile_and_measure(script, script.args, args, entries, run, window, variant)
        elif measure:
            entries.append(_emulated_measure(context, script, entries, run, window, variant, fixed_run))
    return entries


def _emulated_measure(context, script, entries, run, window, variant, fixed_run) -> Entry:
    """--measure under emulate: CPU step times (measure.py says so in the entry), with the
    emulated syncs per step of the original and the fixed version beside them."""
    from torchsync_lint.verify import measure
    from torchsync_lint.verify.fixed_variant import format_rate
    from torchsync_lint.verify.matching import syncs_per_step

    syncs = ""
    if variant is not None:
        if fixed_run is None:
            fixed_run = _replay(context, script, variant[0], variant[1])
        after = syncs_per_step(fixed_run.events, fixed_run.window(script.warmup)) if fixed_run.status == runner.OK else None
        syncs = f"emulated syncs/step {format_rate(syncs_per_step(run.events, window))} -> {format_rate(after)}"
    return measure.measure_script(script, script.args, context.args, context.backend, entries, variant, syncs)


def _outcome(entries: list[Entry]) -> str:
    """One word for the progress line: the script-level status, else failing/ok."""
    level = next((e.status for e in entries if e.line is None and e.status not in ("note", "lint-error")), None)
    if level and level != "stopped":
        return level
    return "FAIL" if any(e.failed for e in entries) else "ok"


def run_verify(args: argparse.Namespace) -> int:
    from torchsync_lint.verify import BUDGET_ONLY_FORMATS

    # `--budget` runs budget_command.run_budget instead (dispatched in verify.run).
    if getattr(args, "update_budget", False) or args.format in BUDGET_ONLY_FORMATS:
        what = "--update-budget" if getattr(args, "update_budget", False) else f"--format {args.format}"
        print(f"torchsync-lint verify: {what} needs --budget FILE", file=sys.stderr)
        return 2
    if not args.paths:
        # No default folder: a `fixtures/` of the user's working directory is rarely what they
        # mean, and this repository's own fixtures are not theirs.
        print(
            "torchsync-lint verify: name the training script(s) to verify: verify train.py [-- SCRIPT ARGS] "
            "(or a directory of fixture scripts; with --budget FILE and no path, the scripts FILE budgets)",
            file=sys.stderr,
        )
        return 2
    paths = args.paths
    try:
        backend = resolve_backend(args.backend)
    except BackendUnavailable as exc:
        print(f"torchsync-lint verify: {exc}", file=sys.stderr)
        return 2
    found, missing, empty = script_files.discover(paths)
    if missing:
        print(f"torchsync-lint verify: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    if empty:
        print(
            f"torchsync-lint verify: no runnable script in {', '.join(empty)} (a directory contributes its "
            f"*.py files that carry a `{script_files.PRAGMA}` line; name a script to run it: verify train.py)",
            file=sys.stderr,
        )
        return 2
    observable, names = rule_metadata()
    context = RunContext(args, backend, observable, names, progress=Progress(sys.stderr, len(found)))
    results: dict[str, list[Entry]] = {}
    interrupted: list[int] = []
    try:
        with _interrupt_handlers(context.cancel, interrupted), _fixture_scale(args), _launcher(context, found) as context.launcher:
            _verify_all(context, found, results)
    finally:
        context.progress.close()
        # The report is written whatever happened above: what was verified, and every script
        # that was not (a second Ctrl-C, an error in the verifier itself) as interrupted.
        entries = [entry for path in found for entry in (results[path] if path in results else [_not_run(path, backend)])]
        _write_reports(args, entries, found, backend)
    if interrupted:
        return 128 + interrupted[0]
    return 1 if any(e.failed for e in entries) else 0


def _not_run(path: str, backend: str) -> Entry:
    return _script_entry(path, backend, runner.INTERRUPTED, "not run: the verifier was interrupted", True)


def _verify_all(context: RunContext, found: list[str], results: dict[str, list[Entry]]) -> None:
    """Verify every script (``--jobs`` at a time), storing each one's entries in ``results``
    as soon as it is done."""
    args = context.args

    def verify_one(path: str) -> None:
        if context.cancel.is_set():
            results[path] = [_not_run(path, context.backend)]
            return
        try:
            script = script_files.load_script(
                path, args.steps, args.warmup, getattr(args, "script_args", None), getattr(args, "cwd", None), getattr(args, "sys_path", None)
            )
            context.progress.started(path, script.expected_steps)
            result = verify_script(script, context)
        except Exception as exc:  # noqa: BLE001 - one script's problem must not lose the others' results
            result = [_script_entry(path, context.backend, "internal-error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}", True)]
        context.progress.finished(path, _outcome(result))
        results[path] = result

    with concurrent.futures.ThreadPoolExecutor(max_workers=_jobs(context)) as pool:
        for _ in pool.map(verify_one, found):
            pass


@contextlib.contextmanager
def _launcher(context: RunContext, found: list[str]) -> Iterator[launch.FreshLauncher | launch.ForkServer]:
    """How runs start. The cuda backend starts each from scratch, with the user's settings.
    The emulate backend forks every run from one server that has imported torch (most of a
    small script's run is that import; TORCHSYNC_VERIFY_FORK=0 turns it off), and gives each
    run its share of the cores for torch's intra-op threads: jobs x threads beyond the cores
    only makes the runs wait on each other (OMP_NUM_THREADS set by the user is kept)."""
    if context.backend != "emulate":
        launcher: launch.FreshLauncher | launch.ForkServer = launch.FreshLauncher()
    else:
        env = {}
        if "OMP_NUM_THREADS" not in os.environ:
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // min(_jobs(context), len(found))))
        launcher = launch.FreshLauncher(env)
        if os.environ.get("TORCHSYNC_VERIFY_FORK", "1") != "0" and launch.ForkServer.available():
            try:
                launcher = launch.ForkServer(EMULATE_PRELOAD, env)
            except OSError:
                pass  # runs start the slow way
    try:
        with containment.adopting():  # a script that kills its supervisor hands its processes to us
            yield launcher
    finally:
        launcher.close()


def _jobs(context: RunContext) -> int:
    # Each script runs in its own subprocess, so threads only wait. On the GPU, scripts run one
    # at a time so profiles and timings are not distorted by a neighbour.
    return 1 if context.backend == "cuda" else max(1, getattr(context.args, "jobs", 1) or 1)


@contextlib.contextmanager
def _fixture_scale(args: argparse.Namespace) -> Iterator[None]:
    """--scale reaches the fixtures as an environment variable (every backend's runs inherit
    the verifier's environment); restored afterwards, since tests run verify in-process."""
    from torchsync_lint.verify import SCALE_ENV

    scale = getattr(args, "scale", None)
    if scale is None:
        yield
        return
    saved = os.environ.get(SCALE_ENV)
    os.environ[SCALE_ENV] = scale
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(SCALE_ENV, None)
        else:
            os.environ[SCALE_ENV] = saved


@contextlib.contextmanager
def _interrupt_handlers(cancel: threading.Event, received: list[int]) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP to the verifier: stop the running scripts (their supervisors
    kill them), skip the rest, and still write the report. A second one is not gentle."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        received.append(signum)
        cancel.set()

    signums = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _write_reports(args: argparse.Namespace, entries: list[Entry], found: list[str], backend: str) -> None:
    environment = None
    if args.format == "markdown":
        from torchsync_lint.verify import environment as run_environment

        environment = run_environment.collect(backend)
    output = render(entries, args.format, found, backend, environment)
    write_outputs(args, output, lambda: render(entries, "json", found, backend))


def write_outputs(args: argparse.Namespace, output: str, json_report: Callable[[], str]) -> None:
    """The report to --output-file (else stdout), and with --json-output the JSON one too."""
    if args.output_file:
        _write(args.output_file, output)
    else:
        sys.stdout.write(output)
        sys.stdout.flush()
    if getattr(args, "json_output", None):
        _write(args.json_output, json_report())


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
