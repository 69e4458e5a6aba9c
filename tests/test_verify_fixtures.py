"""The whole fixture suite under the emulate backend: every marker of a runtime-observable
rule syncs at its line, every expect-sync line syncs, clean fixtures do not sync in their
steady state, nothing crashes or hangs. Skipped until fixtures/ holds fixture scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from torchsync_lint.cli import main  # noqa: E402
from torchsync_lint.verify.scripts import discover  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.skipif(not discover([str(FIXTURES)])[0] if FIXTURES.is_dir() else True, reason="no fixture scripts yet")
def test_every_fixture_verifies_under_emulation(tmp_path):
    out = tmp_path / "fixtures.json"
    code = main(["verify", str(FIXTURES), "--backend", "emulate", "--format", "json", "--output-file", str(out)])
    failures = [e for e in json.loads(out.read_text()) if e["failed"]]
    assert failures == [] and code == 0, json.dumps(failures, indent=2)
