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


def test_with_torch_importable_verify_gets_past_the_check(tmp_path):
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


# -- a project whose loader is made in an imported package -----------------------------------
TRAIN = """\
import torch

from toyloader.data import make_loader

device = "cuda"
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = make_loader()
for epoch in range(100):
    for (x,) in loader:
        x = x.to(device)
        loss = model(x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("done")
"""
DATA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from toyloader.shapes import FEATURES


def make_loader():
    return DataLoader(TensorDataset(torch.randn(256, FEATURES)), batch_size=8)
"""
# Not imported by train.py: its fixable finding stays unfixed in the variant.
UNUSED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def other_loader():
    return DataLoader(TensorDataset(torch.randn(256, 4)), batch_size=8)
"""
TRAIN_LOADER_LINE, DATA_LOADER_LINE = 8, 8


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    package = project / "src" / "toyloader"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "train.py").write_text(TRAIN)
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text(DATA)
    (package / "shapes.py").write_text("FEATURES = 4\n")
    (package / "unused.py").write_text(UNUSED)
    (package / "notes.txt").write_text("read next to the module\n")
    return project


def _snapshot(project: Path) -> dict[str, bytes]:
    return {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*") if p.is_file() and ".torchsync_cache" not in p.parts}


def test_the_fixed_variant_fixes_the_imported_project_modules_in_a_temporary_mirror(tmp_path):
    from torchsync_lint import api
    from torchsync_lint.verify import scripts
    from torchsync_lint.verify.fixed_project import fix_project, write_variant

    project = _project(tmp_path)
    before = _snapshot(project)
    script = scripts.load_script(str(project / "train.py"))
    fixes = fix_project(script.path, api.config_for([script.path]))
    assert sorted(rel for rel, _ in fixes.modules.values()) == ["src/toyloader/data.py"]  # not unused.py: train.py does not import it
    out = tmp_path / "variant"
    out.mkdir()
    variant = write_variant(fixes, script, str(out))
    fixed_path, extra = variant  # as the backends unpack it
    assert variant.modules == ("src/toyloader/data.py",)
    assert "non_blocking=True" in Path(fixed_path).read_text()
    src = str((project / "src").resolve())
    assert extra[0] == str(project.resolve())  # the script's own directory (the project root), then the mirror of src/
    mirror = Path(extra[1])
    assert len(extra) == 2 and mirror.parent == out
    fixed_data = mirror / "toyloader" / "data.py"
    assert not fixed_data.is_symlink() and "pin_memory=torch.cuda.is_available()" in fixed_data.read_text()
    for name in ("__init__.py", "shapes.py", "unused.py", "notes.txt"):  # the rest of the package: the user's files
        assert (mirror / "toyloader" / name).is_symlink() and os.readlink(mirror / "toyloader" / name) == os.path.join(src, "toyloader", name)
    assert not (mirror / "toyloader" / "__pycache__").exists()
    assert _snapshot(project) == before  # nothing of the user's written


def test_a_script_that_imports_no_project_module_gets_only_itself_fixed(tmp_path):
    """The near miss: nothing imported, nothing mirrored; the fixed script still has the
    original's directory on its path."""
    from torchsync_lint import api
    from torchsync_lint.verify import scripts
    from torchsync_lint.verify.fixed_project import fix_project, write_variant

    project = _project(tmp_path)
    (project / "train.py").write_text(TRAIN.replace("from toyloader.data import make_loader", "from torch.utils.data import DataLoader as make_loader"))
    script = scripts.load_script(str(project / "train.py"))
    fixes = fix_project(script.path, api.config_for([script.path]))
    assert fixes.modules == {} and fixes.script_changed
    out = tmp_path / "variant"
    out.mkdir()
    variant = write_variant(fixes, script, str(out))
    assert variant.modules == () and variant.sys_path == [str(project.resolve())]


def test_verify_reports_an_imported_modules_finding_at_its_location_and_compares_the_whole_fix(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import tempfile

    from torchsync_lint.cli import main

    project = _project(tmp_path)
    before = _snapshot(project)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.chdir(project)
    report = tmp_path / "report.json"
    code = main(["verify", "train.py", "--backend", "emulate", "--steps", "3", "--compare-fixed", "--format", "json", "--output-file", str(report)])
    entries = json.loads(report.read_text())
    assert code == 0, entries
    data = os.path.join("src", "toyloader", "data.py")
    (found,) = [e for e in entries if e["code"] == "TSL302"]
    # check's location, and the script line where the runtime saw it as the second one
    assert (found["path"], found["line"], found["status"]) == (data, DATA_LOADER_LINE, "confirmed")
    assert found["script"] == "train.py" and found["observed_at"] == [f"train.py:{TRAIN_LOADER_LINE}"] and found["detail"] == f"observed at train.py:{TRAIN_LOADER_LINE}"
    assert found["evidence"][0]["kind"] == "dataloader-unpinned"
    (own,) = [e for e in entries if e["code"] == "TSL301"]  # the script's own finding stays at its line
    assert (own["path"], own["line"], own["script"], own["observed_at"]) == ("train.py", 11, "train.py", [])
    (compared,) = [e for e in entries if e["status"] == "fixed-compared"]
    # pin_memory=True in data.py is what lets train.py's non_blocking copy stop syncing
    assert compared["detail"] == (
        "train.autofixed.py (and fixed src/toyloader/data.py): syncs/step 1 -> 0; outputs not compared "
        "(neither version ended its output with a `RESULT {json}` line, the only output verify compares)"
    )
    assert _snapshot(project) == before
    assert [n for n in os.listdir(temporary) if n.startswith("torchsync")] == []


def test_matching_puts_a_reached_finding_at_its_own_location_once():
    """Pure matching: data.py:8's finding, reached from train.py lines 8 and 20, is one entry
    at data.py:8, observed where its hazard happened; the script's own finding at line 8
    stays there (the near miss); an unobserved reached finding says where it was looked for.
    JUnit counts it under the script that ran."""
    from xml.etree import ElementTree as ET

    from torchsync_lint.verify import evidence as ev
    from torchsync_lint.verify.evidence import RuntimeEvent
    from torchsync_lint.verify.matching import Expectation, match_script, merge_expectations
    from torchsync_lint.verify.report import render_junit
    from torchsync_lint.verify.steady_state import OPTIMIZER, SteadyWindow

    window = SteadyWindow(OPTIMIZER, total=6, warmup=1)
    events = [RuntimeEvent(8, ev.DATALOADER_UNPINNED, "Tensor.to", s) for s in range(6)]
    events += [RuntimeEvent(8, ev.SCALAR_READ, "aten::_local_scalar_dense", s) for s in range(6)]
    findings = [
        Expectation(8, "TSL302", static=True, origin=("data.py", 8)),
        Expectation(20, "TSL302", static=True, origin=("data.py", 8)),
        Expectation(20, "TSL303", static=True, origin=("data.py", 8)),
        Expectation(8, "TSL101", static=True),
    ]
    entries = match_script("train.py", merge_expectations(findings, [Expectation(8, "TSL101", marker=True)]), events, window, "emulate")
    by_key = {(e.path, e.line, e.code): e for e in entries}
    assert set(by_key) == {("data.py", 8, "TSL302"), ("data.py", 8, "TSL303"), ("train.py", 8, "TSL101")}
    reached = by_key[("data.py", 8, "TSL302")]
    assert (reached.status, reached.observed_at, reached.detail, reached.run_script) == ("confirmed", ["train.py:8"], "observed at train.py:8", "train.py")
    assert [(item.kind, item.per_step) for item in reached.evidence] == [(ev.DATALOADER_UNPINNED, 1.0)]
    unseen = by_key[("data.py", 8, "TSL303")]
    assert unseen.status == "unconfirmed" and not unseen.failed and unseen.observed_at == []
    assert unseen.detail.startswith("not observed at train.py:20 ")
    own = by_key[("train.py", 8, "TSL101")]
    assert own.status == "confirmed" and own.marker == "expect" and own.script is None
    suites = [s.get("name") for s in ET.fromstring(render_junit(entries, ["train.py"])).iter("testsuite")]
    assert suites == ["train.py"]
