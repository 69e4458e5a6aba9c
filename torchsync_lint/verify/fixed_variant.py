"""The fixed version of a script, and the before/after comparison of its syncs.

The fixed version is ``<name>.fixed.py`` beside the script, else what `--fix --unsafe-fixes`
would write (the project's configuration, the script fixed in its project session) written
to a temporary folder (removed when the comparison is done), which then needs the
original's directory on ``sys.path`` for its local imports.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import tokenize
from collections.abc import Iterator

from torchsync_lint.verify import runner
from torchsync_lint.verify.matching import Entry, syncs_per_step
from torchsync_lint.verify.scripts import Script
from torchsync_lint.verify.steady_state import SteadyWindow


@contextlib.contextmanager
def fixed_variant(script: Script) -> Iterator[tuple[str, list[str]] | None]:
    """(path, extra sys.path entries) of the fixed script, or None when there is none; a
    fixer-written copy lives as long as the ``with`` block."""
    if script.fixed_path:
        yield script.fixed_path, []
        return
    from torchsync_lint import api
    from torchsync_lint.config import ConfigError
    from torchsync_lint.fixer import fix_source

    # Decoded as the file declares (PEP 263: a latin-1 script is not UTF-8) and written back
    # in that encoding, so the copy keeps its coding line true.
    with open(script.path, "rb") as handle:
        raw = handle.read()
    encoding, _ = tokenize.detect_encoding(iter(raw.splitlines(keepends=True)).__next__)
    source = raw.decode(encoding)
    try:
        config = api.config_for([script.path])
    except ConfigError:  # `--fix` would not run either; static_expectations reports it (lint-error)
        yield None
        return
    with api.session_for(script.path, config).editing(script.path) as lint:
        fixed = fix_source(source, script.path, config, unsafe=True, lint=lint).new_source
    if fixed == source:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="torchsync-fixed-") as directory:
        stem = os.path.basename(script.path)
        path = os.path.join(directory, (stem[: -len(".py")] if stem.endswith(".py") else stem) + ".autofixed.py")
        with open(path, "wb") as handle:
            handle.write(fixed.encode("utf-8" if encoding == "utf-8-sig" else encoding))
        yield path, [os.path.dirname(os.path.abspath(script.path))]


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
    script: Script, backend: str, original: runner.RunRecord, original_window: SteadyWindow, fixed: runner.RunRecord, fixed_path: str
) -> Entry:
    """``fixed-compared``: steady syncs per step before -> after. Fails when the fixed version
    does not run to completion or syncs more than the original; a changed RESULT is reported
    (unsafe fixes may change it) but does not fail."""
    name = os.path.basename(fixed_path)
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
        return "no RESULT line to compare (the script prints none)"
    if after is None:
        return f"RESULT missing from the fixed version (was {before})"
    if before is None:
        return f"RESULT printed by the fixed version only ({after})"
    return "RESULT unchanged" if same_result(before, after) else f"RESULT differs ({before} -> {after})"


def format_rate(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
