"""``torchsync-lint verify``: lint each script, replay it, match, report, exit status."""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tokenize

from torchsync_lint.verify import runner, scripts as script_files
from torchsync_lint.verify.fixed_variant import compare_entry, fixed_variant
from torchsync_lint.verify.matching import Entry, Expectation, match_script, merge_expectations
from torchsync_lint.verify.report import render

EMULATE_HARNESS = "torchsync_lint.verify.emulate.harness"


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
        from torchsync_lint.api import lint_file

        result = lint_file(path)
        findings = [Expectation(f.line, f.code, f.name, f.message, static=True) for f in result.findings]
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


def _script_entry(path: str, backend: str, status: str, detail: str, failed: bool) -> Entry:
    return Entry(path, None, None, status, backend, failed=failed, detail=detail)


def _replay(
    backend: str, path: str, script_args: list[str], timeout: float, is_fixture: bool, extra_sys_path: list[str] | None = None
) -> runner.RunRecord:
    """The backend's attribution run of one script, in a subprocess."""
    if backend == "cuda":
        from torchsync_lint.verify.cuda import backend as cuda_backend

        return cuda_backend.attribute(path, script_args, timeout, require_result=is_fixture, extra_sys_path=extra_sys_path)
    harness_args = runner.sys_path_args(extra_sys_path)
    return runner.run_harness(EMULATE_HARNESS, path, script_args, timeout, harness_args, require_result=is_fixture)


def verify_script(script: script_files.Script, backend: str, args: argparse.Namespace, observable, names) -> list[Entry]:
    missing = script.missing_requirements
    if missing:
        return [_script_entry(script.path, backend, "skipped", f"requires {', '.join(missing)} (not importable)", False)]
    expectations, lint_error = static_expectations(script.path, names)
    entries: list[Entry] = []
    if lint_error:
        entries.append(_script_entry(script.path, backend, "lint-error", lint_error, False))

    is_fixture = script.is_fixture
    script_args = ["--steps", str(script.steps)] if is_fixture else []
    run = _replay(backend, script.path, script_args, args.timeout, is_fixture)

    if run.status != runner.OK:
        entries.append(_script_entry(script.path, backend, run.status, run.detail, True))
        return entries

    window = run.window(script.warmup)
    entries += match_script(script.path, expectations, run.events, window, backend, observable)

    # The fixed version (a *.fixed.py, else the fixer's output in a temporary file), made
    # once for --compare-fixed and --measure alike.
    compare = getattr(args, "compare_fixed", False)
    measure = backend == "cuda" and getattr(args, "measure", False)
    variant = fixed_variant(script) if compare or measure else None
    if compare and variant is not None:
        fixed_path, extra_path = variant
        fixed_run = _replay(backend, fixed_path, script_args, args.timeout, is_fixture, extra_path)
        entries.append(compare_entry(script, backend, run, window, fixed_run, fixed_path))

    if backend == "cuda":
        from torchsync_lint.verify.cuda import backend as cuda_backend

        entries += cuda_backend.profile_and_measure(script, script_args, args, entries, run, window, variant)
    return entries


def run_verify(args: argparse.Namespace) -> int:
    paths = args.paths or ["fixtures/"]
    try:
        backend = resolve_backend(args.backend)
    except BackendUnavailable as exc:
        print(f"torchsync-lint verify: {exc}", file=sys.stderr)
        return 2
    if args.measure and backend != "cuda":
        print("torchsync-lint verify: --measure needs the cuda backend (a GPU)", file=sys.stderr)
        return 2
    found, missing = script_files.discover(paths)
    if missing:
        print(f"torchsync-lint verify: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    observable, names = rule_metadata()
    show_progress = sys.stderr.isatty()

    def verify_one(path: str) -> list[Entry]:
        script = script_files.load_script(path, args.steps, args.warmup)
        return verify_script(script, backend, args, observable, names)

    # Each script runs in its own subprocess, so threads only wait. On the GPU, scripts run one
    # at a time so profiles and timings are not distorted by a neighbour.
    jobs = 1 if backend == "cuda" else max(1, getattr(args, "jobs", 1) or 1)
    entries: list[Entry] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for number, (path, result) in enumerate(zip(found, pool.map(verify_one, found)), 1):
            if show_progress:
                print(f"[{number}/{len(found)}] {path} ({backend})", file=sys.stderr, flush=True)
            entries += result

    environment = None
    if args.format == "markdown":
        from torchsync_lint.verify import environment as run_environment

        environment = run_environment.collect(backend)
    output = render(entries, args.format, found, backend, environment)
    if args.output_file:
        _write(args.output_file, output)
    else:
        sys.stdout.write(output)
    if getattr(args, "json_output", None):
        _write(args.json_output, render(entries, "json", found, backend))
    return 1 if any(e.failed for e in entries) else 0


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
