"""Run several fixture programs in one Python process (torch imported once) and print each
one's RESULT line: ``python -m tests.robustness.run_many DIR/SCRIPT.py ...``.

Each script runs as ``__main__`` with ``--steps 3`` and its own directory first on sys.path
(a rewrite's ``robust_helpers`` module is imported from there, fresh for each script). The
output is one JSON line per script: ``{"script": ..., "result": <RESULT json> | null,
"error": ...}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import traceback


def run_one(script: str) -> dict:
    here = os.path.dirname(os.path.abspath(script))
    for name in [m for m in sys.modules if m == "robust_helpers"]:
        del sys.modules[name]
    out = io.StringIO()
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv, sys.path = [script, "--steps", "3"], [here] + sys.path
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
    except BaseException:  # noqa: BLE001  (a rewrite that breaks the program: reported, not raised)
        return {"script": script, "result": None, "error": traceback.format_exc()[-1500:]}
    finally:
        sys.argv, sys.path = old_argv, old_path
    lines = [line for line in out.getvalue().splitlines() if line.startswith("RESULT")]
    if not lines:
        return {"script": script, "result": None, "error": "no RESULT line: " + out.getvalue()[-500:]}
    return {"script": script, "result": json.loads(lines[-1][len("RESULT"):].strip()), "error": None}


def main(argv: list[str]) -> int:
    for script in argv:
        print(json.dumps(run_one(script)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
