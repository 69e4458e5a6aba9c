"""Child-process entry point of the emulate backend.

    python -m torchsync_lint.verify.emulate.harness --out EVENTS.json SCRIPT [SCRIPT ARGS...]

Runs SCRIPT as ``__main__`` under virtual CUDA and writes the recorded events, the step
clock and the script's outcome to EVENTS.json (schema: see ``RunRecord`` in runner.py).
The exit status is the script's (1 for an uncaught exception).
"""

from __future__ import annotations

import sys

from torchsync_lint.verify.frames import UserFrameFinder
from torchsync_lint.verify.harness_common import Patcher, StepClock, harness_main, run_record, run_script
from torchsync_lint.verify.sites import SiteFinder, with_sites


def emulate_script(script: str, script_args: list[str], extra_sys_path: list[str] | None = None) -> dict:
    """Run ``script`` in this process under virtual CUDA; everything is undone on return."""
    # torch is imported here, not at module level, so importing the package stays cheap.
    from torchsync_lint.verify.emulate import patches, sinks
    from torchsync_lint.verify.emulate.virtual_cuda import (
        VirtualCudaDispatchMode,
        VirtualCudaFunctionMode,
        VirtualCudaState,
    )

    finder = UserFrameFinder(script)
    clock = StepClock()
    state = VirtualCudaState(user_line=lambda: finder.line(2), clock=clock.snapshot)
    sites = SiteFinder(script, construct=lambda: state.reads[-1] if state.reads else None)
    state.locate = sites.locate
    patcher = Patcher()
    flags = patches.backend_flags()
    clock.install()
    try:
        patches.install(patcher, state, clock)
        sinks.install(patcher, state)
        with VirtualCudaFunctionMode(state), VirtualCudaDispatchMode(state):
            outcome = run_script(finder.user_file, script_args, extra_sys_path)
    finally:
        patcher.restore()
        clock.uninstall()
        patches.restore_backend_flags(flags)

    return with_sites(run_record("emulate", clock, state, outcome), state, sites)


def main(argv: list[str] | None = None) -> int:
    return harness_main(
        "torchsync_lint.verify.emulate.harness", argv, lambda args: emulate_script(args.script, args.script_args, args.sys_path)
    )


if __name__ == "__main__":
    sys.exit(main())
