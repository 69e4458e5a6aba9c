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
    entries = json.loads(out.read_text())
    failures = [e for e in entries if e["failed"]]
    assert failures == [] and code == 0, json.dumps(failures, indent=2)
    # The README states how many markers CI confirms in the fixtures that need no optional
    # package (torchvision, lightning): count those only, so that the claim holds whether or
    # not such a package is installed here.
    from torchsync_lint.verify.scripts import load_script

    plain = [e for e in entries if not load_script(e["path"]).requires]
    confirmed = sum(1 for e in plain if e["status"] == "confirmed" and e["marker"] == "expect")
    expect_sync = sum(1 for e in plain if e["status"] == "confirmed" and e["marker"] == "expect-sync")
    readme = (FIXTURES.parent / "README.md").read_text()
    claim = f"the {confirmed} runtime-observable `# expect:` markers and the {expect_sync} `# expect-sync:` lines"
    assert claim in readme
