"""`verify` on scripts that are not fixtures (issue 14): the step clock stops any script
after its warm-up and --steps steps and keeps the evidence; script arguments after `--`;
the project root as working directory and import root; a path with nothing to run is an
error; progress on a terminal; a legend under the table; --scale reaches the fixtures."""

from __future__ import annotations

import io
import json
import os
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torchsync_lint.cli import main  # noqa: E402
from torchsync_lint.verify import SCALE_ENV, split_script_args  # noqa: E402
from torchsync_lint.verify import command, scripts  # noqa: E402
from torchsync_lint.verify.matching import Entry, Evidence  # noqa: E402
from torchsync_lint.verify.progress import Progress  # noqa: E402
from torchsync_lint.verify.report import render_json, render_text  # noqa: E402


def _write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def _verify(tmp_path: Path, *args: str) -> tuple[int, list[dict]]:
    out = tmp_path / "report.json"
    code = main(["verify", *args[: _split(args)], "--backend", "emulate", "--format", "json", "--output-file", str(out), *args[_split(args) :]])
    return code, json.loads(out.read_text())


def _split(args: tuple[str, ...]) -> int:
    return args.index("--") if "--" in args else len(args)


ENDLESS_TRAINING = """\
import torch
model = torch.nn.Linear(4, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
while True:  # trains forever: only the step clock ends it
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    last = loss.item()  # expect: TSL101
"""


def test_the_step_clock_stops_any_script_after_warmup_and_steps(tmp_path):
    script = _write(tmp_path / "endless.py", ENDLESS_TRAINING)
    code, entries = _verify(tmp_path, str(script), "--steps", "4", "--warmup", "1", "--timeout", "60")
    by_status = {e["status"]: e for e in entries}
    assert code == 0, entries
    assert by_status["stopped"]["detail"] == "stopped by the step clock after 5 optimizer steps"
    assert not by_status["stopped"]["failed"]
    confirmed = by_status["confirmed"]
    assert confirmed["line"] == 9
    # item() at steps 1..4 (after each of the first four optimizer steps); the steady window
    # is steps 1..4: the warm-up (1) and the 4 steps asked for.
    assert confirmed["evidence"] == [{"kind": "scalar-read", "op": "aten::_local_scalar_dense", "per_step": 1.0, "count": 4}]


ENDLESS_EVAL = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=4, num_workers=2, pin_memory=True)
model = torch.nn.Linear(4, 1).to("cuda")
while True:  # evaluates forever, no optimizer: the clock counts batches
    for (batch,) in loader:
        score = model(batch.to("cuda", non_blocking=True)).mean().item()  # expect: TSL101
"""


def test_without_an_optimizer_the_clock_stops_after_as_many_batches(tmp_path):
    script = _write(tmp_path / "eval.py", ENDLESS_EVAL)
    code, entries = _verify(tmp_path, str(script), "--steps", "3", "--warmup", "2", "--timeout", "60")
    by_status = {e["status"]: e for e in entries}
    assert code == 0, entries
    assert by_status["stopped"]["detail"] == "stopped by the step clock after 5 batches (no optimizer step)"
    assert by_status["confirmed"]["evidence"][0]["per_step"] == 1.0


def test_script_arguments_follow_the_double_dash():
    argv, script_args = split_script_args(["verify", "train.py", "--steps", "20", "--", "--epochs", "1", "--", "x"])
    assert argv == ["verify", "train.py", "--steps", "20"]
    assert script_args == ["--epochs", "1", "--", "x"]
    assert split_script_args(["verify", "train.py"]) == (["verify", "train.py"], [])


NEEDS_ARGS = """\
import argparse, pathlib
parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
pathlib.Path(args.out).write_text(pathlib.Path(args.data).read_text() + " @ " + str(pathlib.Path.cwd()))
"""


def test_arguments_and_working_directory_reach_the_script(tmp_path):
    project = tmp_path / "project"
    _write(project / "pyproject.toml", "[project]\nname = 'p'\n")
    _write(project / "data" / "input.txt", "hello")
    script = _write(project / "scripts" / "run.py", NEEDS_ARGS)
    out = tmp_path / "seen.txt"
    # --data is relative: it resolves against the project root, the default working directory.
    code, entries = _verify(tmp_path, str(script), "--", "--data", "data/input.txt", "--out", str(out))
    assert (code, entries) == (0, [])
    assert out.read_text() == f"hello @ {project}"
    # --cwd overrides the root.
    _write(tmp_path / "elsewhere" / "data" / "input.txt", "other")
    code, entries = _verify(tmp_path, str(script), "--cwd", str(tmp_path / "elsewhere"), "--", "--data", "data/input.txt", "--out", str(out))
    assert (code, entries) == (0, [])
    assert out.read_text() == f"other @ {tmp_path / 'elsewhere'}"


def test_a_src_layout_imports_without_shadowing_installed_modules(tmp_path):
    project = tmp_path / "project"
    _write(project / "setup.cfg", "[metadata]\nname = p\n")
    _write(project / "src" / "mypkg" / "__init__.py", "VALUE = 'from src'\n")
    _write(project / "json.py", "raise RuntimeError('the project root came before the standard library')\n")
    script = _write(project / "tools" / "train.py", "import json\nimport mypkg\nassert mypkg.VALUE == 'from src'\n")
    code, entries = _verify(tmp_path, str(script))
    assert (code, entries) == (0, [])
    # --sys-path replaces that default and comes first, like PYTHONPATH.
    _write(tmp_path / "other" / "mypkg" / "__init__.py", "VALUE = 'from other'\n")
    _write(project / "tools" / "check_other.py", "import mypkg\nassert mypkg.VALUE == 'from other', mypkg.VALUE\n")
    code, entries = _verify(tmp_path, str(project / "tools" / "check_other.py"), "--sys-path", str(tmp_path / "other"))
    assert (code, entries) == (0, [])


def test_run_options_default_to_the_project_root(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    script = _write(project / "a" / "b" / "train.py", "")
    options = scripts.run_options(str(script))
    assert options.cwd == str(project)
    assert options.fallback_path == [str(project), str(project / "src")] and options.sys_path == []
    loose = _write(tmp_path / "loose" / "train.py", "")
    if scripts.project_root(str(loose)) is None:  # no marker anywhere above the temp dir
        assert scripts.run_options(str(loose)).cwd is None  # the verifier's own directory
    chosen = scripts.run_options(str(script), cwd="x", sys_path=["lib"])
    assert chosen.cwd == os.path.abspath("x") and chosen.sys_path == [os.path.abspath("lib")] and chosen.fallback_path == []


def test_a_fixture_gets_its_step_count_and_any_other_script_the_step_clock(tmp_path):
    fixture = _write(tmp_path / "f.py", "# torchsync-fixture: steps=6 warmup=1\n")
    plain = _write(tmp_path / "p.py", "x = 1\n")
    as_fixture = scripts.load_script(str(fixture), user_args=["--extra"])
    assert as_fixture.args == ["--steps", "6", "--extra"] and as_fixture.options.stop_after is None
    as_script = scripts.load_script(str(plain), steps=20, warmup=2, user_args=["--epochs", "1"])
    assert as_script.args == ["--epochs", "1"] and as_script.options.stop_after == 22


def test_a_path_with_nothing_to_run_is_an_error(tmp_path, capsys):
    _write(tmp_path / "src" / "pkg" / "module.py", "x = 1\n")
    assert main(["verify", str(tmp_path / "src"), "--backend", "emulate"]) == 2
    err = capsys.readouterr().err
    assert "no runnable script in" in err and "name a script to run it" in err


def test_progress_on_a_terminal_shows_scripts_steps_and_time():
    stream = io.StringIO()
    progress = Progress(stream, scripts=2, enabled=True)
    progress.started("a.py", 10)
    progress.step("a.py", 3)
    progress.started("b.py", 8)
    assert progress.status_line().startswith("[0/2 done, ") and progress.status_line().endswith("a.py step 3/10, b.py step 0/8")
    progress.finished("a.py", "ok")
    progress.close()
    shown = stream.getvalue()
    assert "a.py step 3/10" in shown and "\n" in shown
    assert "[1/2] a.py: ok (" in shown
    quiet = io.StringIO()
    Progress(quiet, scripts=1, enabled=False).started("a.py", 10)
    assert quiet.getvalue() == ""
    assert Progress(io.StringIO(), scripts=1).enabled is False  # a StringIO is no terminal


def test_progress_sees_the_steps_of_the_running_script(tmp_path, monkeypatch):
    stream = io.StringIO()
    steps_seen: list[int] = []

    class Recording(Progress):
        def __init__(self, _stream, scripts):
            super().__init__(stream, scripts, enabled=True)

        def step(self, path, steps):
            steps_seen.append(steps)
            super().step(path, steps)

    monkeypatch.setattr(command, "Progress", Recording)
    slow = ENDLESS_TRAINING.replace("    last = loss.item()  # expect: TSL101", "    __import__('time').sleep(0.2)")
    script = _write(tmp_path / "slow.py", slow)
    code, _ = _verify(tmp_path, str(script), "--steps", "6", "--warmup", "1")
    assert code == 0
    assert max(steps_seen) >= 3, steps_seen  # it ran 7 steps, 0.2 s each; the parent polls every 0.1 s
    assert "/7" in stream.getvalue() and "slow.py: ok" in stream.getvalue()


def test_the_text_report_explains_its_marks_and_json_keeps_its_shape():
    entries = [
        Entry("a.py", 3, "TSL101", "confirmed", "emulate", [Evidence("scalar-read", "aten::_local_scalar_dense", 6, 1.0)], static=True),
        Entry("a.py", 7, None, "runtime-only", "emulate", [Evidence("scalar-read", "aten::item", 2, None)], failed=True),
        Entry("a.py", None, None, "stopped", "emulate", detail="stopped by the step clock after 10 optimizer steps"),
    ]
    text = render_text(entries, ["a.py"], "emulate")
    legend = text[text.index("legend:") :]
    for mark in ("confirmed", "runtime-only", "stopped", "FAIL", "xN", "N/step"):
        assert f"\n  {mark} " in legend, mark
    assert "unconfirmed" not in legend and "cost" not in legend  # only the marks the table shows
    assert text.strip().splitlines()[-1].startswith("verify: 1 script(s)")
    keys = {"path", "line", "code", "name", "status", "backend", "evidence", "cost_ms_per_step", "cost_pct", "static", "marker", "failed", "detail", "script", "observed_at"}
    assert all(set(item) == keys for item in json.loads(render_json(entries)))


SCALED = """\
# torchsync-fixture: steps=2
import json, os, pathlib
scale = os.environ.get("TORCHSYNC_FIXTURE_SCALE", "small")
pathlib.Path(__file__).with_suffix(".seen").write_text(scale)
print("RESULT " + json.dumps({"scale": scale}))
"""


def test_scale_reaches_the_fixtures(tmp_path, monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    script = _write(tmp_path / "scaled.py", SCALED)
    code, entries = _verify(tmp_path, str(script), "--scale", "medium")
    assert (code, entries) == (0, [])
    assert script.with_suffix(".seen").read_text() == "medium"
    assert SCALE_ENV not in os.environ  # the verifier's own environment is restored
    code, entries = _verify(tmp_path, str(script))
    assert script.with_suffix(".seen").read_text() == "small"


def test_every_fixture_reads_the_scale():
    """`verify --scale medium` only means something if each fixture sizes its model and
    batches from TORCHSYNC_FIXTURE_SCALE (tests/test_verify_fixtures.py runs them at the
    default scale; `verify fixtures/ --scale medium` confirms the same markers)."""
    root = Path(__file__).resolve().parent.parent / "fixtures"
    found, _, _ = scripts.discover([str(root)])
    assert found
    ignoring = [path for path in found if SCALE_ENV not in Path(path).read_text(encoding="utf-8")]
    assert ignoring == []
