"""Runtime verifier: ``torchsync-lint verify [PATH...]``.

Replays scripts in a subprocess, records every CPU-GPU sync with the user's line, and
matches the evidence to static findings and ``# expect:`` markers.

This module is imported by the CLI to build its parser, on the lint path too: it must stay
free of torch (and of anything heavy). torch is imported only in the child harnesses and,
for ``--backend auto``, inside ``run``.
"""

from __future__ import annotations

import argparse

BACKENDS = ("auto", "emulate", "cuda")
FORMATS = ("text", "json", "junit", "markdown", "github", "sarif")
BUDGET_ONLY_FORMATS = ("github", "sarif")  # annotations at the lines whose syncs rose


# Where torch comes from, said in one line when it is missing (as `server` does for pygls).
INSTALL_HINT = "pip install 'torchsync-lint[verify]'"

SCALES = ("small", "medium", "large")
SCALE_ENV = "TORCHSYNC_FIXTURE_SCALE"  # how the bundled fixtures read --scale


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "%(prog)s [options] [PATH ...] [-- SCRIPT ARGS ...]"
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help="training scripts, or directories of fixture scripts (at least one; with --budget and none, the scripts "
        "the budget names); arguments after `--` go to every script",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="auto", help="auto = cuda when torch.cuda.is_available(), else emulate"
    )
    parser.add_argument(
        "--steps", type=int, default=None,
        help="steady-state steps to record (default: the fixture pragma, else 8): a fixture gets --steps N; "
        "any other script is stopped by the step clock after the warm-up and N optimizer steps "
        "(or batches, without an optimizer)",
    )
    parser.add_argument("--warmup", type=int, default=None, help="warm-up steps excluded from steady state (default 2)")
    parser.add_argument(
        "--timeout", type=positive_seconds, default=120.0, help="seconds per script run before it counts as hung (a positive number)"
    )
    parser.add_argument(
        "--cwd", default=None, metavar="DIR",
        help="working directory of the scripts (default: the project root, the nearest directory above the "
        "script with a pyproject.toml, setup.cfg, setup.py or .git, as for check)",
    )
    parser.add_argument(
        "--sys-path", action="append", default=None, metavar="DIR", dest="sys_path",
        help="put DIR on the scripts' sys.path after their own directory, like PYTHONPATH (repeatable; "
        "default: the project root and its src/, after everything installed)",
    )
    parser.add_argument(
        "--scale", choices=SCALES, default=None,
        help=f"model and batch size of the bundled fixtures (they read ${SCALE_ENV}); default small (fast, for CI); "
        "medium for step-time costs of a realistic size on a GPU; large: fixtures/scale/ at ResNet size (the others read it as small)",
    )
    parser.add_argument(
        "--jobs", type=int, default=_default_jobs(), help="emulate: scripts replayed in parallel (default: up to 4, one per core); cuda runs one at a time"
    )
    parser.add_argument("--format", choices=FORMATS, default="text", dest="format")
    parser.add_argument("--output-file", default=None, help="write the report here instead of stdout")
    parser.add_argument(
        "--json-output", default=None, metavar="FILE",
        help="also write the JSON report here (with --format markdown: the table and its raw data from one run)",
    )
    parser.add_argument(
        "--measure", action="store_true",
        help="step time of the script vs its fixed version, and of each fix applied alone (the cost of each finding); "
        "under emulate these are CPU times of a CPU run, which do not predict the GPU cost",
    )
    parser.add_argument(
        "--compare-fixed",
        action="store_true",
        help="also replay each script's fixed version (<name>.fixed.py or the fixer's output) and compare syncs per step",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="--measure: fresh runs per variant, the variants alternating (median and spread are reported)"
    )
    parser.add_argument(
        "--trace-dir", default=None, help="cuda only: where to write profiler traces (default: a temp dir, kept)"
    )
    parser.add_argument(
        "--budget", default=None, metavar="FILE",
        help="sync budget (TOML): count each script's steady-state syncs per step by line and kind and fail (exit 1) "
        "when one rises above FILE; without PATHs, every script FILE budgets (with its arguments and steps)",
    )
    parser.add_argument(
        "--update-budget", action="store_true", dest="update_budget",
        help="with --budget: write the counts of this run into FILE (created if missing; tolerances kept)",
    )


def positive_seconds(value: str) -> float:
    """A deadline in seconds: finite and above zero (``nan`` would never fire, ``inf`` neither)."""
    import math

    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {value!r}")
    return seconds


def _default_jobs() -> int:
    import os

    return max(1, min(4, os.cpu_count() or 1))


def split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``verify train.py --steps 20 -- --epochs 1``: (the verifier's arguments, the script's)."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def run(args: argparse.Namespace) -> int:
    import sys

    from torchsync_lint.verify.scripts import requirement_available

    # Every backend replays the scripts under torch; asked without importing it (find_spec),
    # so that a missing torch is one line, not an ImportError from deep inside a run.
    if not requirement_available("torch"):
        print(f"torchsync-lint: error: `torchsync-lint verify` needs torch (not installed here): {INSTALL_HINT}", file=sys.stderr)
        return 2
    if getattr(args, "budget", None):
        from torchsync_lint.verify.budget_command import run_budget

        return run_budget(args)
    from torchsync_lint.verify.command import run_verify

    return run_verify(args)
