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
    # docs/verify.md states how many markers CI confirms: in the fixtures that need no optional
    # package, and in those that need only the `dev` extra's logging libraries (tensorboard,
    # wandb, accelerate, tqdm, Lightning). Counted separately, so that the first claim holds
    # whether or not those are installed here; torchvision fixtures never run in CI.
    from torchsync_lint.verify.scripts import load_script

    requires = {e["path"]: {r.split(".")[0] for r in load_script(e["path"]).requires} for e in entries}
    plain = [e for e in entries if not requires[e["path"]]]
    extra = [e for e in entries if requires[e["path"]] and "torchvision" not in requires[e["path"]]]
    confirmed = sum(1 for e in plain if e["status"] == "confirmed" and e["marker"] == "expect")
    expect_sync = sum(1 for e in plain if e["status"] == "confirmed" and e["marker"] == "expect-sync")
    readme = " ".join((FIXTURES.parent / "docs" / "verify.md").read_text().split())
    claim = f"the {confirmed} runtime-observable `# expect:` markers and the {expect_sync} `# expect-sync:` line{'s' * (expect_sync != 1)} in the fixtures that need no optional package"
    assert claim in readme
    if any(e["status"] == "skipped" for e in extra):
        pytest.skip("a logging library of the dev extra is missing: its fixtures' markers were not counted")
    extra_confirmed = sum(1 for e in extra if e["status"] == "confirmed" and e["marker"] == "expect")
    assert f"and the {extra_confirmed} markers of the fixtures that need the `dev` extra" in readme
