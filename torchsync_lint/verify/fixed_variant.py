"""The fixed version of a script, and the before/after comparison of its syncs.

The fixed version is ``<name>.fixed.py`` beside the script, else what `--fix --unsafe-fixes`
would write (the project's configuration, the script and the project modules it imports fixed
in its project session: fixed_project.py) written to a temporary folder (removed when the
comparison is done), which then needs the original's directory on ``sys.path`` for its local
imports, and the fixed modules' mirrors before their originals.

Outputs are compared through the script's ``RESULT {json}`` line only (the fixture contract),
never through the rest of its output: a training script's stdout holds losses that the fixed
version sums in another order, timings, progress bars, dates and paths, and the step clock
stops both runs wherever they are in a print. A diff of that would report a difference for
every script, or, with numbers masked, hide the one that matters. When no RESULT line was
printed, the report says that the outputs were not compared, and how to have them compared.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator

from torchsync_lint.verify import runner
from torchsync_lint.verify.fixed_project import FixedVariant, fix_project, write_variant
from torchsync_lint.verify.matching import Entry, syncs_per_step
from torchsync_lint.verify.scripts import Script
from torchsync_lint.verify.steady_state import SteadyWindow

__all__ = ["FixedVariant", "compare_entry", "compare_results", "fixed_variant", "format_rate", "same_result"]


@contextlib.contextmanager
def fixed_variant(script: Script) -> Iterator[FixedVariant | None]:
    """The fixed script (it unpacks as ``path, extra sys.path entries``), or None when there
    is none; a fixer-written copy lives as long as the ``with`` block."""
    if script.fixed_path:
        yield FixedVariant(script.fixed_path, [])
        return
    from torchsync_lint import api
    from torchsync_lint.config import ConfigError

    try:
        config = api.config_for([script.path])
    except ConfigError:  # `--fix` would not run either; static_expectations reports it (lint-error)
        yield None
        return
    fixes = fix_project(script.path, config)
    if not fixes.changed:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="torchsync-fixed-") as directory:
        yield write_variant(fixes, script, directory)


def same_result(a: dict | None, b: dict | None, rel_tol: float = 1e-4) -> bool:
    """RESULT payloads equal, numbers within ``rel_tol`` (the fixed run may sum in another order)."""
    if a is None or b is None:
        return False
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            if not math.isclose(x, y, rel_tol=rel_tol, abs_tol=1e-9):
                return False
        elif json.dumps(x, sort_keys=True) != json.dumps(y, sort_keys=True):
            return False
    return True


def compare_entry(
    script: Script,
    backend: str,
    original: runner.RunRecord,
    original_window: SteadyWindow,
    fixed: runner.RunRecord,
    fixed_path: str,
    modules: tuple[str, ...] = (),
) -> Entry:
    """``fixed-compared``: steady syncs per step before -> after. Fails when the fixed version
    does not run to completion or syncs more than the original; a changed RESULT is reported
    (unsafe fixes may change it) but does not fail. ``modules``: the project modules fixed
    besides the script, named so that the numbers say what they are of."""
    name = os.path.basename(fixed_path) + (f" (and fixed {', '.join(modules)})" if modules else "")
    if fixed.status != runner.OK:
        return Entry(script.path, None, None, "fixed-" + fixed.status, backend, failed=True, detail=f"{name}: {fixed.detail}")
    before = syncs_per_step(original.events, original_window)
    after = syncs_per_step(fixed.events, fixed.window(script.warmup))
    worse = before is not None and after is not None and after > before
    detail = f"{name}: syncs/step {format_rate(before)} -> {format_rate(after)}; {compare_results(original.result, fixed.result)}"
    if worse:
        detail += "; the fixed version syncs more"
    return Entry(script.path, None, None, "fixed-compared", backend, failed=worse, detail=detail)


def compare_results(before: dict | None, after: dict | None) -> str:
    """What became of the script's ``RESULT {json}`` line in the fixed version."""
    if before is None and after is None:
        return "outputs not compared (neither version ended its output with a `RESULT {json}` line, the only output verify compares)"
    if after is None:
        return f"RESULT missing from the fixed version (was {before})"
    if before is None:
        return f"RESULT printed by the fixed version only ({after})"
    return "RESULT unchanged" if same_result(before, after) else f"RESULT differs ({before} -> {after})"


def format_rate(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
