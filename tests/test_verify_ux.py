"""Issue 40, items 10-12: what `verify` says and does for a user's project.

- without torch: one line with the install command, exit 2 (as `server` for pygls);
- without a path: a usage error naming what to give, never a search for `fixtures/`;
- a finding `check` reports in a module the script imports is reported at check's
  location, with the script line where it was observed as a second location;
- `--compare-fixed` fixes the project modules the script imports too (in the temporary
  copy), and says when it did not compare the outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The CLI in a child whose `import torch` fails as where torch is not installed (a
# module set to None in sys.modules makes import and find_spec both say "not there").
NO_TORCH = [sys.executable, "-c", "import sys; sys.modules['torch'] = None; del sys.path[0]; "
            "from torchsync_lint.cli import main; sys.exit(main(sys.argv[1:]))"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.parametrize("extra", [[], ["--backend", "emulate"], ["--budget", "syncs.toml"]], ids=["auto", "emulate", "budget"])
def test_without_torch_verify_says_how_to_install_it(tmp_path, extra):
    (tmp_path / "train.py").write_text("print('hi')\n")
    done = subprocess.run([*NO_TORCH, "verify", "train.py", *extra], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == ["torchsync-lint: error: `torchsync-lint verify` needs torch (not installed here): pip install 'torchsync-lint[verify]'"]
    assert done.stdout == "" and not (tmp_path / "syncs.toml").exists()


def test_with_torch_the_check_lets_verify_run(tmp_path):
    """The near miss: the same child without the block gets past the check (to the usage
    error of a script that does not exist, so that nothing is replayed)."""
    pytest.importorskip("torch")
    cli = [NO_TORCH[0], "-c", NO_TORCH[2].replace("sys.modules['torch'] = None; ", "")]
    done = subprocess.run([*cli, "verify", "missing.py", "--backend", "emulate"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no such file or directory: missing.py" in done.stderr and "needs torch" not in done.stderr


def test_verify_without_a_path_is_a_usage_error_not_a_search_for_fixtures(tmp_path, monkeypatch, capsys):
    from torchsync_lint.cli import main

    pytest.importorskip("torch")
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()  # a folder of that name in the user's directory is not taken for the scripts
    (fixtures / "f.py").write_text("# torchsync-fixture: steps=2\nraise SystemExit('ran')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "--backend", "emulate"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        "torchsync-lint verify: name the training script(s) to verify: verify train.py [-- SCRIPT ARGS] "
        "(or a directory of fixture scripts; with --budget FILE and no path, the scripts FILE budgets)"
    ]
    assert captured.out == ""
