"""Issue 24's done-when, end to end: ``torchsync-lint verify --budget`` replays two versions of
one small multi-module training script (tests/data/sync_budget: project/ and the second
versions of its per-step helper in changes/) on the emulate backend.

* adding a per-step sync to the helper module (an ``.item()``, a macro torchmetrics update, a
  tensorboard ``add_scalar`` of a tensor) fails the check, naming the helper's line and the
  library frame; removing it again passes and suggests ``--update-budget``;
* unchanged code passes, and ``--update-budget`` on it leaves the file byte-identical;
* the gated read (``if step % 4 == 0``) is counted by its period and does not flap with ``--steps``;
* the committed budget of the fixtures catches a sync added to a clean fixture;
* bad input exits 2 with a clear message.
Pure logic (file format, comparison, reports): tests/test_verify_budget_logic.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from torchsync_lint.cli import main  # noqa: E402
from torchsync_lint.verify import budget_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "sync_budget"
SCRIPT_ARGS = ["--", "--log-dir", "runs"]  # the writer variant logs to tensorboard
HELPER = "step_helpers.py"
GATED = ("step_helpers.py", 7, "host-read")  # `if context.step % context.log_every == 0: print(... .item() ...)`


def _project(tmp_path: Path, name: str = "proj") -> Path:
    project = tmp_path / name
    shutil.copytree(DATA / "project", project)
    (project / "pyproject.toml").write_text("[project]\nname = 'toy'\n")  # the project root
    return project


def _verify(project: Path, *argv: str, budget: str = "syncs.toml") -> tuple[int, str, dict]:
    """Run verify in-process; (exit status, text report, JSON report). Script arguments last."""
    text, data = project / "report.txt", project / "report.json"
    for path in (text, data):
        path.unlink(missing_ok=True)
    cut = argv.index("--") if "--" in argv else len(argv)
    code = main([
        "verify", *argv[:cut], "--budget", str(project / budget), "--backend", "emulate", "--timeout", "120",
        "--output-file", str(text), "--json-output", str(data), *argv[cut:],
    ])
    return code, text.read_text() if text.exists() else "", json.loads(data.read_text()) if data.exists() else {}


def _lines(report: dict, status: str) -> list[dict]:
    (script,) = report["scripts"]
    return [line for line in script["lines"] if line["status"] == status]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, str]:
    """The project with its budget written at --steps 10: (project, budget text)."""
    project = _project(tmp_path_factory.mktemp("budget"))
    code, text, report = _verify(project, str(project / "train.py"), "--steps", "10", "--update-budget", *SCRIPT_ARGS)
    assert code == 0, text
    assert report["scripts"][0]["status"] == "added" and report["written"] is True
    return project, (project / "syncs.toml").read_text()


def _copy(base: tuple[Path, str], tmp_path: Path) -> Path:
    project = _project(tmp_path)
    (project / "syncs.toml").write_text(base[1])
    return project


def test_the_budget_counts_the_gated_read_by_its_period(base):
    project, text = base
    (script,) = budget_file.load(str(project / "syncs.toml")).scripts.values()
    assert (script.path, script.args, script.steps, script.warmup, script.window, script.backend) == ("train.py", ["--log-dir", "runs"], 10, 2, 10, "emulate")
    (line,) = script.lines
    assert (line.file, line.line, line.kind) == GATED and line.function == "after_step"
    assert (line.count, line.period.every, line.period.exact) == (1, 4, True)  # once every 4 steps, not "0.25 per step"
    assert script.total == 0.25 and 'every = 4, code = "print(f\\"step {context.step}' in text


def test_unchanged_code_passes_and_updating_it_is_a_no_op(base, tmp_path):
    project = _copy(base, tmp_path)
    code, text, report = _verify(project)  # the budget's scripts, arguments and steps
    assert code == 0, text
    assert report["scripts"][0]["status"] == "within" and "; OK" in text and "update-budget" not in text
    stamp = (project / "syncs.toml").stat().st_mtime_ns
    code, text, report = _verify(project, "--update-budget")
    assert code == 0 and report["scripts"][0]["status"] == "unchanged" and report["written"] is False
    assert (project / "syncs.toml").read_text() == base[1] and (project / "syncs.toml").stat().st_mtime_ns == stamp


# The second versions of step_helpers.py: (kind of the added sync, its library frame).
CHANGES = {
    "item": ("host-read", None),
    "metric": ("metric", "torchmetrics/utilities/data.py:206 _bincount"),
    "writer": ("logger", "torch/utils/tensorboard/_convert_np.py"),
}


def test_a_sync_added_in_a_helper_module_fails_and_removing_it_passes(tmp_path):
    """One budget over three copies of the project (one replay per step for all three, two at a
    time), each of which gets one of the three second versions of its helper module."""
    pytest.importorskip("tensorboard")
    (tmp_path / "pyproject.toml").write_text("")
    for change in CHANGES:
        shutil.copytree(DATA / "project", tmp_path / change)
    scripts = [str(tmp_path / change / "train.py") for change in CHANGES]
    assert _verify(tmp_path, *scripts, "--jobs", "2", "--update-budget", *SCRIPT_ARGS)[0] == 0
    for change in CHANGES:
        shutil.copy(DATA / "changes" / f"step_helpers_{change}.py", tmp_path / change / HELPER)

    code, text, report = _verify(tmp_path, "--jobs", "2")
    assert code == 1, text
    assert "FAIL: syncs per step rose" in text and "accept them with --update-budget" in text
    for change, script in zip(CHANGES, report["scripts"]):
        kind, library = CHANGES[change]
        assert script["path"] == f"{change}/train.py" and script["status"] == "rose", script
        (rose,) = [line for line in script["lines"] if line["status"] == "rose"]
        assert (rose["now"]["file"], rose["now"]["line"], rose["now"]["kind"], rose["change"]) == (f"{change}/{HELPER}", 5, kind, "new: 1 per step")
        assert rose["now"]["calls"][:3] == [f"{change}/train.py:40 <module>", f"{change}/engine.py:30 train_one_epoch", f"{change}/step_helpers.py:5 after_step"]
        assert (f"{change}/step_helpers.py:5 ({library}" if library else f"{change}/step_helpers.py:5  ") in text
        assert rose["now"]["via"] is None if library is None else rose["now"]["via"].startswith(library)
        # The gated read moved down a line: the same line, not a new one.
        (moved,) = [line for line in script["lines"] if line["status"] == "same"]
        assert (moved["budget"]["line"], moved["now"]["line"]) == (7, 8)

    # Accept them, then remove them again: the check passes and says the budget can come down.
    assert _verify(tmp_path, "--jobs", "2", "--update-budget")[0] == 0
    for change in CHANGES:
        shutil.copy(DATA / "project" / HELPER, tmp_path / change / HELPER)
    code, text, report = _verify(tmp_path, "--jobs", "2")
    assert code == 0, text
    assert "run with --update-budget to lower the budget" in text
    for script in report["scripts"]:
        assert script["status"] == "fell"
        (fell,) = [line for line in script["lines"] if line["status"] == "fell"]
        assert fell["budget"]["line"] == 5 and fell["change"] == "gone (was 1 per step)"


def test_a_gated_sync_does_not_flap_with_steps(base, tmp_path):
    project = _copy(base, tmp_path)
    for steps in ("3", "6", "13"):
        code, text, report = _verify(project, "--steps", steps)
        assert code == 0 and report["scripts"][0]["status"] == "within", (steps, text)
    # Written at another step count, the budget says the same about every line.
    code, _, _ = _verify(project, "--steps", "13", "--update-budget")
    assert code == 0
    again = budget_file.load(str(project / "syncs.toml")).scripts["train.py"]
    first = budget_file.load(str(base[0] / "syncs.toml")).scripts["train.py"]
    assert (again.steps, again.window) == (13, 13) and again.lines == first.lines and again.total == first.total == 0.25


def test_the_fixture_budget_catches_a_sync_added_to_a_clean_fixture(tmp_path):
    """What .ci/run checks: budgets/fixtures.toml against the fixtures. A copy of the clean
    host_sync fixture, at the same place in a copy of the repository layout, passes against
    the committed budget; with a per-step `.item()` added it fails at that line."""
    name = "fixtures/clean/host_sync_clean.py"
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "fixtures" / "clean").mkdir(parents=True)
    (tmp_path / "budgets").mkdir()
    shutil.copy(ROOT / "budgets" / "fixtures.toml", tmp_path / "budgets" / "fixtures.toml")
    shutil.copy(ROOT / name, tmp_path / name)
    code, text, report = _verify(tmp_path, str(tmp_path / name), budget="budgets/fixtures.toml")
    assert code == 0 and report["scripts"][0]["status"] == "within", text

    source = (tmp_path / name).read_text()
    anchor = "        running_loss += loss.detach()\n"
    assert source.count(anchor) == 1
    (tmp_path / name).write_text(source.replace(anchor, anchor + "        last_loss = loss.item()\n"))
    line = source[: source.index(anchor)].count("\n") + 2
    code, text, report = _verify(tmp_path, str(tmp_path / name), budget="budgets/fixtures.toml")
    assert code == 1, text
    (rose,) = _lines(report, "rose")
    assert (rose["now"]["file"], rose["now"]["line"], rose["now"]["kind"]) == (name, line, "host-read")
    assert f"{name}:{line}" in text


# -- bad input: exit 2, a clear message, nothing written -------------------------------------------
def test_a_missing_or_malformed_budget_exits_2(tmp_path, capsys):
    project = _project(tmp_path)
    assert _verify(project, str(project / "train.py"))[0] == 2
    assert "no such budget file" in capsys.readouterr().err and not (project / "syncs.toml").exists()
    (project / "syncs.toml").write_text("version = 1\n[scripts.'train.py'\n")
    assert _verify(project, "--update-budget")[0] == 2  # not overwritten either
    assert "not valid TOML" in capsys.readouterr().err and (project / "syncs.toml").read_text() == "version = 1\n[scripts.'train.py'\n"
    (project / "syncs.toml").write_text('version = 1\n[scripts."train.py"]\nargs = []\nsteps = "ten"\n')
    assert _verify(project)[0] == 2
    assert 'scripts."train.py": `steps` must be an integer' in capsys.readouterr().err


def test_a_budgeted_script_that_is_gone_or_an_empty_budget_exits_2(tmp_path, capsys):
    project = _project(tmp_path)
    (project / "syncs.toml").write_text('version = 1\n[scripts."gone.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\n')
    assert _verify(project)[0] == 2
    assert "scripts of" in (err := capsys.readouterr().err) and "gone.py" in err and "delete their entries" in err
    (project / "syncs.toml").write_text("version = 1\n")
    assert _verify(project)[0] == 2
    assert "budgets no script yet" in capsys.readouterr().err


def test_a_budget_for_other_arguments_another_backend_or_another_script_exits_2(base, tmp_path):
    project = _copy(base, tmp_path)
    code, text, report = _verify(project, "--", "--log-dir", "elsewhere")
    assert code == 2 and "the budget was written for other arguments: --log-dir runs, this run: --log-dir elsewhere" in text
    (project / "syncs.toml").write_text(base[1].replace('backend = "emulate"', 'backend = "cuda"'))
    code, text, _ = _verify(project)
    assert code == 2 and "written on the cuda backend, this run uses emulate" in text
    shutil.copy(project / "train.py", project / "other.py")
    code, text, _ = _verify(project, str(project / "other.py"))
    assert code == 2 and "not in the budget" in text and "--update-budget" in text


def test_a_script_that_crashes_or_never_steps_exits_2_and_writes_nothing(tmp_path):
    project = _project(tmp_path)
    (project / "crash.py").write_text("import torch\nfor step in range(100):\n    x = torch.ones(2)\n    if step == 3:\n        raise RuntimeError('boom at step 3')\n")
    (project / "no_steps.py").write_text("import torch\nx = torch.ones(3, device='cuda')\nprint(x.sum().item())\n")
    code, text, report = _verify(project, str(project / "crash.py"), str(project / "no_steps.py"), "--update-budget")
    assert code == 2, text
    by_path = {s["path"]: s for s in report["scripts"]}
    assert by_path["crash.py"]["status"] == "error" and "the script crashed: RuntimeError: boom at step 3" in by_path["crash.py"]["detail"]
    assert by_path["no_steps.py"]["status"] == "error" and "never reached a steady-state step" in by_path["no_steps.py"]["detail"]
    assert "the budget was not written" in text and not (project / "syncs.toml").exists()


def test_a_budget_that_cannot_be_written_exits_2_and_stays_as_it_was(base, tmp_path):
    project = _copy(base, tmp_path)
    budget = project / "syncs.toml"
    budget.write_text(base[1] + "# a hand edit that --update-budget rewrites away\n")
    budget.chmod(0o444)  # read-only: atomic.write_atomic refuses it, even for root
    code, text, report = _verify(project, "--update-budget")
    assert code == 2 and report["write_error"] == "cannot write: the file is read-only" and report["written"] is None
    assert "ERROR: the budget could not be written (cannot write: the file is read-only); it is as it was (exit 2)" in text
    assert budget.read_text() == base[1] + "# a hand edit that --update-budget rewrites away\n"


def test_a_script_whose_requirement_is_missing_is_skipped_budgeted_or_not(tmp_path):
    """As in CI without torchvision: its fixtures are in no budget and are skipped, not errors."""
    project = _project(tmp_path)
    (project / "needs.py").write_text("# torchsync-fixture: requires=torchsync_no_such_package\nimport torchsync_no_such_package\n")
    (project / "syncs.toml").write_text("version = 1\n")
    code, text, report = _verify(project, str(project / "needs.py"))
    assert code == 0, text
    assert report["scripts"][0]["status"] == "skipped" and "requires torchsync_no_such_package" in report["scripts"][0]["detail"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--update-budget"], "--update-budget needs --budget FILE"),
        (["--format", "github"], "--format github needs --budget FILE"),
        (["--budget", "b.toml", "--format", "markdown"], "--format markdown does not go with --budget"),
        (["--budget", "b.toml", "--compare-fixed"], "--compare-fixed does not go with --budget"),
        (["--budget", "b.toml", "--steps", "0", "--update-budget"], "--steps must be at least 1"),
        (["--budget", "b.toml"], "no such budget file"),
    ],
)
def test_usage_errors_exit_2(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["verify", str(DATA / "project" / "train.py"), "--backend", "emulate", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="the cuda backend needs a GPU")
def test_the_cuda_backend_writes_the_same_budget_format(tmp_path):
    project = _project(tmp_path)
    code = main(["verify", str(project / "train.py"), "--steps", "10", "--budget", str(project / "cuda.toml"), "--backend", "cuda", "--update-budget"])
    assert code == 0
    loaded = budget_file.load(str(project / "cuda.toml"))
    assert budget_file.dumps(loaded) == (project / "cuda.toml").read_text()
    (script,) = loaded.scripts.values()
    assert script.backend == "cuda" and any(line.file == HELPER for line in script.lines)
