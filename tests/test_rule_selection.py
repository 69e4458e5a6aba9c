"""Rule selection as ruff resolves it (selection.py): the more specific selector wins; at one
specificity, within one source, the ignore wins; the command line's selectors over the
file's. In check, flake8 (our config narrowing flake8's own selection), the server and verify."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.catalog import rule_table
from torchsync_lint.cli import main
from torchsync_lint.config import Config, ConfigError
from torchsync_lint.selection import Selection, resolve, specificity

ROOT = Path(__file__).resolve().parent.parent
RULES = rule_table()
DEFAULT = {c for c, r in RULES.items() if r.default_enabled}
TSL1 = {c for c in RULES if c.startswith("TSL1")}
TSL3 = {c for c in RULES if c.startswith("TSL3")}
PROBE = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    total += loss.item()
"""  # TSL301 at line 5, TSL101 at line 7


def _on(*sources: Selection) -> set[str]:
    return resolve(list(sources), RULES, DEFAULT)


def test_specificity_orders_all_prefixes_and_codes():
    assert [specificity(s, RULES) for s in ("ALL", "TSL", "TSL1", "TSL10", "TSL101", "host-read-in-loop")] == [0, 3, 4, 5, 6, 6]


def test_the_more_specific_selector_wins_within_one_source():
    assert _on(Selection(extend_select=["TSL301"], ignore=["TSL3"])) == DEFAULT - TSL3 | {"TSL301"}
    assert _on(Selection(extend_select=["TSL101"], ignore=["TSL1", "TSL3"])) == DEFAULT - TSL1 - TSL3 | {"TSL101"}
    assert _on(Selection(select=["TSL101"], ignore=["TSL"])) == {"TSL101"}
    # near miss: the ignore is the more specific one, so it wins
    assert _on(Selection(extend_select=["TSL3"], ignore=["TSL301"])) == DEFAULT - {"TSL301"}
    assert _on(Selection(select=["ALL"], ignore=["blocking-host-to-device-copy"])) == set(RULES) - {"TSL301"}


def test_at_one_specificity_the_ignore_wins():
    assert _on(Selection(select=["TSL301"], ignore=["TSL301"])) == set()
    assert _on(Selection(extend_select=["TSL3"], ignore=["TSL3"])) == DEFAULT - TSL3


def test_the_later_source_wins_over_the_earlier_whatever_the_specificity():
    config, cli = Selection(ignore=["TSL101"]), Selection(extend_select=["TSL1"])
    assert "TSL101" in _on(config, cli)  # --extend-select TSL1 re-enables what the file ignores
    assert "TSL101" not in _on(cli, config)
    assert _on(Selection(extend_select=["TSL101"]), Selection(ignore=["TSL1"])) == DEFAULT - TSL1
    # a later `select` replaces the whole earlier choice
    assert _on(Selection(ignore=["TSL301"]), Selection(select=["TSL3"])) == TSL3
    # (ruff) `select = []` with ignores carries them over to the next source's selection
    assert _on(Selection(select=[], ignore=["TSL301"]), Selection(select=["TSL3"])) == TSL3 - {"TSL301"}


def test_an_unknown_selector_names_the_file(tmp_path):
    config = Config(ignore=["TSL8"], source=tmp_path / "pyproject.toml")
    with pytest.raises(ConfigError, match=r"pyproject.toml: unknown rule selector 'TSL8'"):
        config.enabled_codes(RULES)


# -- entry points ----------------------------------------------------------------------------------

def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


def _codes(out: str) -> list[str]:
    return sorted(d["code"] for d in json.loads(out))


def test_check_cli_extend_select_is_more_specific_than_its_ignore(project, capsys):
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--ignore", "TSL1,TSL3", "--extend-select", "TSL101", "probe.py")
    assert _codes(out) == ["TSL101"]
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--ignore", "TSL1,TSL3", "--extend-select", "TSL102", "probe.py")
    assert _codes(out) == []  # near miss: another code of the family stays off


def test_check_config_extend_select_is_more_specific_than_its_ignore(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL3"]\nextend-select = ["TSL301"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "probe.py")
    assert _codes(out) == ["TSL101", "TSL301"]
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL301"]\nextend-select = ["TSL3"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "probe.py")
    assert _codes(out) == ["TSL101"]


def test_check_cli_over_config(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL301"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--extend-select", "TSL3", "probe.py")
    assert _codes(out) == ["TSL101", "TSL301"]
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-select = ["TSL301"]\n')
    _, out, _ = run(capsys, "--no-cache", "--format", "json", "--ignore", "TSL3", "probe.py")
    assert _codes(out) == ["TSL101"]


def test_flake8_applies_our_config_to_its_selection(project):
    pytest.importorskip("flake8")
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL3"]\nextend-select = ["TSL301"]\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))

    def flake8(*args):
        proc = subprocess.run([sys.executable, "-m", "flake8", "-j", "1", *args, "probe.py"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
        return sorted(line.split(" ")[1] for line in proc.stdout.splitlines())

    assert flake8("--select", "TSL") == ["TSL101", "TSL301"]
    assert flake8("--select", "TSL1") == ["TSL101"]  # flake8's own selection still decides what can show
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL301"]\nextend-select = ["TSL3"]\n')
    assert flake8("--select", "TSL") == ["TSL101"]


def test_server_resolves_the_config_as_check_does(project):
    from torchsync_lint.server.workspace import Workspace

    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL3"]\nextend-select = ["TSL301"]\n')
    ws = Workspace(use_cache=False)
    ws.open(str(project / "probe.py"), PROBE, 1)
    assert sorted(f.code for f in ws.documents[str(project / "probe.py")].outcome.findings) == ["TSL101", "TSL301"]


def test_verify_expects_what_check_reports(project):
    from torchsync_lint.verify.command import static_expectations

    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nignore = ["TSL1"]\nextend-select = ["TSL101"]\n')
    assert sorted(e.code for e in static_expectations(str(project / "probe.py"), {})[0] if e.static) == ["TSL101", "TSL301"]
