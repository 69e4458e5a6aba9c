"""Fixture snapshots of `--fix --unsafe-fixes` and proof that SAFE fixes keep results.

Each fixture with a fixable finding has `<scenario>.fixed.py` beside it: the
`--fix --unsafe-fixes` output. Regenerate with
`TORCHSYNC_UPDATE_FIXTURES=1 pytest tests/test_fix_fixtures.py` (never by editing this test).
The snapshot must equal the current fixer output, parse, compile, and be a fixed point.

Equivalence: a fixture with SAFE fixes is run on CPU before and after `--fix` (`--steps 3`,
seeded) and must print the same `RESULT {json}` within float tolerance. TSL101's
accumulate fix claims bit-identical results, so fixtures whose unsafe fixes are all TSL101
are also run after `--fix --unsafe-fixes` and compared exactly.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import libcst as cst
import pytest

from torchsync_lint.config import Config
from torchsync_lint.files import read_source
from torchsync_lint.fixer import fix_source
from torchsync_lint.markers import read_pragmas
from torchsync_lint.types import Applicability

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for p in (ROOT / "fixtures").glob("**/*.py") if not p.name.endswith(".fixed.py"))
UPDATE = os.environ.get("TORCHSYNC_UPDATE_FIXTURES") == "1"
EXACT_UNSAFE = {"TSL101"}  # unsafe fixes whose results are identical by construction (see its Fix safety)


def _id(path: Path) -> str:
    return path.relative_to(ROOT / "fixtures").as_posix()


def snapshot_path(path: Path) -> Path:
    return path.with_name(path.stem + ".fixed.py")


@lru_cache(maxsize=None)
def _fixed(path: Path, unsafe: bool):
    source = read_source(str(path)).text
    return fix_source(source, _id(path), Config(), unsafe)


def test_fixtures_are_collected():
    assert FIXTURES, "no fixtures found"


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_fixed_snapshot(path: Path):
    result = _fixed(path, True)
    snap = snapshot_path(path)
    assert not result.refused, result.refused
    assert result.converged
    if not result.applied:
        if UPDATE and snap.exists():
            snap.unlink()
        assert not snap.exists(), f"{snap.name} is stale: the fixture has nothing to fix"
        return
    if UPDATE:
        snap.write_text(result.new_source, encoding="utf-8", newline="")
    assert snap.exists(), f"missing {snap.name}: run TORCHSYNC_UPDATE_FIXTURES=1 pytest {Path(__file__).name}"
    with open(snap, encoding="utf-8", newline="") as fh:
        expected = fh.read()
    assert expected == result.new_source, f"{snap.name} differs from the fixer output; regenerate it"
    cst.parse_module(expected)
    compile(expected, str(snap), "exec", dont_inherit=True)
    again = fix_source(expected, _id(snap), Config(), True)
    assert again.new_source == expected and not again.applied, "re-fixing the snapshot changed it"


def test_no_orphan_snapshots():
    orphans = [p for p in (ROOT / "fixtures").glob("**/*.fixed.py") if not p.with_name(p.name[: -len(".fixed.py")] + ".py").exists()]
    assert not orphans


def _runnable(path: Path) -> bool:
    return "requires" not in read_pragmas(str(path))


def _with_fixes(level: Applicability) -> list[Path]:
    out = []
    for path in FIXTURES:
        if not _runnable(path):
            continue
        if level is Applicability.SAFE:
            if any(f.fix.applicability is Applicability.SAFE for f in _fixed(path, False).applied):
                out.append(path)
        else:
            applied = _fixed(path, True).applied
            unsafe = {f.code for f in applied if f.fix.applicability is Applicability.UNSAFE}
            if unsafe and unsafe <= EXACT_UNSAFE:
                out.append(path)
    return out


def _result(script: Path, tmp_path: Path) -> object:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, str(script), "--steps", "3"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), f"{script.name}: last stdout line is not RESULT: {last!r}"
    return json.loads(last[len("RESULT ") :])


def _close(a, b, exact: bool) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k], exact) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y, exact) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not exact:
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)
    return type(a) is type(b) and a == b


def _compare(path: Path, unsafe: bool, tmp_path: Path, exact: bool) -> None:
    original_dir, fixed_dir = tmp_path / "original", tmp_path / "fixed"
    original_dir.mkdir()
    fixed_dir.mkdir()
    (original_dir / path.name).write_text(read_source(str(path)).text, encoding="utf-8")
    (fixed_dir / path.name).write_text(_fixed(path, unsafe).new_source, encoding="utf-8")
    before = _result(original_dir / path.name, original_dir)
    after = _result(fixed_dir / path.name, fixed_dir)
    assert _close(before, after, exact), f"RESULT changed:\n{before}\n{after}"


@pytest.mark.parametrize("path", _with_fixes(Applicability.SAFE), ids=_id)
def test_safe_fixes_keep_results(path: Path, tmp_path: Path):
    pytest.importorskip("torch")
    _compare(path, False, tmp_path, exact=False)


@pytest.mark.parametrize("path", _with_fixes(Applicability.UNSAFE), ids=_id)
def test_exact_unsafe_fixes_keep_results_bit_for_bit(path: Path, tmp_path: Path):
    pytest.importorskip("torch")
    _compare(path, True, tmp_path, exact=True)
