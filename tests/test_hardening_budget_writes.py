"""Hardening of the sync budget and of the writers (tests/../repro/hardening):

* a budget key that leads outside the project (`../x.py`, an absolute path, a symlink out)
  is a usage error, and nothing runs;
* two `--update-budget` runs at once both land (the write locks, re-reads and merges);
* every number of a budget file is finite and >= 0, and a file nested too deeply for the
  TOML reader is a usage error, not an internal one.

No script is really replayed: where a run is needed, ``run_script`` is replaced by one that
"measures" a fixed entry, so these tests need no torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchsync_lint.atomic import ChangedOnDisk, WriteError
from torchsync_lint.cli import main
from torchsync_lint.verify import budget_command, budget_file, budget_update
from torchsync_lint.verify.budget import BudgetFile, ScriptBudget
from torchsync_lint.verify.budget_file import BudgetError

ROOT = Path(__file__).resolve().parent.parent
ENTRY = 'args = []\nsteps = 5\nwarmup = 2\nwindow = 5\nbackend = "emulate"\ntolerance = 0\ntotal = 0.0\nsyncs = []\n'


def _entry(path: str, tolerance: float = 0, total: float = 0.0) -> ScriptBudget:
    return ScriptBudget(path=path, args=[], steps=5, warmup=2, window=5, backend="emulate", tolerance=tolerance, total=total)


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    return project, outside


def _evil(outside: Path, marker: Path) -> Path:
    """A script outside the project that leaves ``marker`` behind when anything runs it."""
    script = outside / "evil.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return script


# -- 5: no budget key outside the project -------------------------------------------------------


@pytest.mark.parametrize("key", ["../outside/evil.py", "ABSOLUTE"])
def test_a_budget_key_outside_the_project_is_refused_and_nothing_runs(tmp_path, capsys, key):
    project, outside = _project(tmp_path)
    marker = tmp_path / "EVIL_RAN"
    script = _evil(outside, marker)
    key = str(script) if key == "ABSOLUTE" else key
    (project / "syncs.toml").write_text(f'version = 1\n[scripts."{key}"]\n{ENTRY}')
    code = main(["verify", "--budget", str(project / "syncs.toml"), "--backend", "emulate", "--timeout", "60"])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    (line,) = err.strip().splitlines()  # one line, naming the file and the key
    assert "syncs.toml" in line and key in line and "project root" in line


def test_a_budget_key_that_is_a_symlink_out_of_the_project_is_refused(tmp_path, capsys):
    project, outside = _project(tmp_path)
    marker = tmp_path / "EVIL_RAN"
    os.symlink(_evil(outside, marker), project / "train.py")
    (project / "syncs.toml").write_text(f'version = 1\n[scripts."train.py"]\n{ENTRY}')
    code = main(["verify", "--budget", str(project / "syncs.toml"), "--backend", "emulate", "--timeout", "60"])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert "train.py" in err and "outside the project root" in err and "nothing was run" in err


def test_a_named_script_outside_the_project_is_not_budgeted(tmp_path, capsys):
    project, outside = _project(tmp_path)
    marker = tmp_path / "EVIL_RAN"
    script = _evil(outside, marker)
    code = main(["verify", str(script), "--budget", str(project / "syncs.toml"), "--update-budget", "--backend", "emulate", "--timeout", "60"])
    assert code == 2 and not marker.exists() and not (project / "syncs.toml").exists()
    assert "outside the project root" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["train.py", "sub/train.py", "a..b.py", "..hidden/x.py", "with space/t.py"])
def test_keys_inside_the_project_are_accepted(name):
    assert budget_file.key_problem(name) is None
    budget_file.parse({"version": 1, "scripts": {name: {"args": [], "steps": 5, "warmup": 2, "window": 5, "backend": "emulate"}}}, "b.toml")


@pytest.mark.parametrize("name", ["../x.py", "sub/../../x.py", "/etc/x.py", "./x.py", "sub//x.py", ""])
def test_keys_leading_elsewhere_are_refused_on_load(name):
    assert budget_file.key_problem(name) is not None
    with pytest.raises(BudgetError, match="project root"):
        budget_file.parse({"version": 1, "scripts": {name: {"args": [], "steps": 5, "warmup": 2, "window": 5, "backend": "emulate"}}}, "b.toml")


def test_inside_resolves_symlinks_both_ways(tmp_path):
    project, outside = _project(tmp_path)
    (project / "real.py").write_text("")
    os.symlink(project / "real.py", project / "link_in.py")  # a link that stays in: fine
    os.symlink(outside, project / "out_dir")
    assert budget_command.inside(str(project / "link_in.py"), str(project))
    assert budget_command.inside(str(project / "sub" / "new.py"), str(project))
    assert not budget_command.inside(str(project / "out_dir" / "x.py"), str(project))
    assert not budget_command.inside(str(tmp_path / "proj2" / "x.py"), str(project))  # a sibling sharing the prefix


# -- 6: concurrent --update-budget runs ---------------------------------------------------------

# A stand-in for budget_command.run_script: "measures" an empty entry for the script (no run).
_FAKE_RUN = textwrap.dedent(
    """
    from torchsync_lint.verify import budget_command
    from torchsync_lint.verify.budget import ADDED, ScriptBudget, ScriptResult

    def fake_run_script(context, script, key, entry, root):
        measured = ScriptBudget(path=key, args=[], steps=5, warmup=2, window=5, backend="emulate")
        return ScriptResult(key, ADDED, "", None, entry, measured)
    """
)


def test_two_update_runs_at_once_keep_both_scripts(tmp_path, monkeypatch):
    """Run A reads the (absent) budget, then, while its script "runs", a whole second process
    B adds its own script and writes; A then writes. Both scripts must be in the file."""
    project, _ = _project(tmp_path)
    budget = project / "syncs.toml"
    for name in ("a.py", "b.py"):
        (project / name).write_text("x = 1\n")
    monkeypatch.setenv("TORCHSYNC_VERIFY_FORK", "0")  # nothing to fork from: no run starts
    namespace: dict = {}
    exec(_FAKE_RUN, namespace)
    second = _FAKE_RUN + textwrap.dedent(
        f"""
        import sys
        from torchsync_lint.cli import main
        budget_command.run_script = fake_run_script
        sys.exit(main(["verify", {str(project / "b.py")!r}, "--budget", {str(budget)!r}, "--update-budget", "--backend", "emulate"]))
        """
    )

    def run_a_while_b_updates(context, script, key, entry, root):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", second], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return namespace["fake_run_script"](context, script, key, entry, root)

    monkeypatch.setattr(budget_command, "run_script", run_a_while_b_updates)
    assert main(["verify", str(project / "a.py"), "--budget", str(budget), "--update-budget", "--backend", "emulate"]) == 0
    assert sorted(budget_file.load(str(budget)).scripts) == ["a.py", "b.py"]
    assert not os.path.exists(budget_update.lock_path(str(budget)))  # no lock file left behind


def test_an_update_keeps_the_tolerance_the_file_holds_now(tmp_path):
    path = tmp_path / "syncs.toml"
    budget_file.write(BudgetFile(str(path), {"a.py": _entry("a.py", tolerance=2), "b.py": _entry("b.py")}), str(path))
    assert budget_update.update(str(path), {"a.py": _entry("a.py", total=1.5), "c.py": _entry("c.py")}) is True
    scripts = budget_file.load(str(path)).scripts
    assert sorted(scripts) == ["a.py", "b.py", "c.py"]
    assert (scripts["a.py"].tolerance, scripts["a.py"].total) == (2, 1.5)
    assert budget_update.update(str(path), {"a.py": _entry("a.py", total=1.5)}) is False  # unchanged: not rewritten


def test_an_update_waits_for_the_lock_and_gives_up_after_its_timeout(tmp_path):
    path = tmp_path / "syncs.toml"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(
            f"""
            import sys, time
            from torchsync_lint.verify import budget_update
            with budget_update.locked({str(path)!r}):
                print("held", flush=True)
                time.sleep(float(sys.argv[1]))
            """
        ), "1.5"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(WriteError, match="held its lock"):
            budget_update.update(str(path), {"a.py": _entry("a.py")}, timeout=0.2)
        assert not path.exists()
        assert budget_update.update(str(path), {"a.py": _entry("a.py")}, timeout=30) is True  # once released
    finally:
        holder.wait(timeout=30)
    assert sorted(budget_file.load(str(path)).scripts) == ["a.py"]
    assert not os.path.exists(budget_update.lock_path(str(path)))


def test_two_spellings_of_one_budget_take_one_lock(tmp_path):
    (tmp_path / "ci").mkdir()
    real = tmp_path / "ci" / "syncs.toml"
    os.symlink(real, tmp_path / "syncs.toml")
    assert budget_update.lock_path(str(tmp_path / "syncs.toml")) == budget_update.lock_path(str(real)) == str(tmp_path / "ci" / ".syncs.toml.lock")


def test_a_budget_broken_meanwhile_or_changed_after_reading_is_left_alone(tmp_path):
    path = tmp_path / "syncs.toml"
    path.write_text("version = 1\n[scripts.\n")  # broken by hand while the run ran
    with pytest.raises(WriteError, match="no longer valid"):
        budget_update.update(str(path), {"a.py": _entry("a.py")})
    assert path.read_text() == "version = 1\n[scripts.\n"
    budget_file.write(BudgetFile(str(path), {"b.py": _entry("b.py")}), str(path))
    _, seen = budget_file.load_with_fingerprint(str(path))
    path.write_text(path.read_text() + "# edited\n")
    with pytest.raises(ChangedOnDisk):
        budget_file.write(BudgetFile(str(path), {"a.py": _entry("a.py")}), str(path), expected=seen)
    assert path.read_text().endswith("# edited\n")


# -- 7: numbers and nesting ---------------------------------------------------------------------


def _budget_with(tmp_path: Path, **values: str) -> Path:
    fields = {"args": "[]", "steps": "5", "warmup": "2", "window": "5", "backend": '"emulate"', "tolerance": "0", "total": "1.5"}
    fields.update(values)
    path = tmp_path / "b.toml"
    path.write_text('version = 1\n[scripts."train.py"]\n' + "".join(f"{k} = {v}\n" for k, v in fields.items()))
    return path


@pytest.mark.parametrize(
    ("key", "value"),
    [("total", "nan"), ("total", "inf"), ("total", "-inf"), ("total", "-5.0"), ("total", "-1"), ("total", "1e400"), ("total", "9" * 400),
     ("tolerance", "nan"), ("tolerance", "inf"), ("tolerance", "-0.5"), ("total", "true"), ("total", '"1"')],
)
def test_a_number_that_is_not_finite_and_non_negative_is_refused(tmp_path, key, value):
    path = _budget_with(tmp_path, **{key: value})
    with pytest.raises(BudgetError) as error:
        budget_file.load(str(path))
    assert str(path) in str(error.value) and f"`{key}`" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(("key", "value"), [("total", "0"), ("total", "0.0"), ("total", "2.25"), ("total", "7"), ("tolerance", "0.5"), ("tolerance", "3")])
def test_finite_non_negative_numbers_are_kept(tmp_path, key, value):
    (script,) = budget_file.load(str(_budget_with(tmp_path, **{key: value}))).scripts.values()
    assert getattr(script, key) == float(value)


@pytest.mark.parametrize("key", ["steps", "window"])
def test_integers_beyond_any_float_are_refused(tmp_path, key):
    with pytest.raises(BudgetError, match=f"`{key}` must be an integer <= 2\\*\\*53"):
        budget_file.load(str(_budget_with(tmp_path, **{key: str(2**53 + 1)})))
    budget_file.load(str(_budget_with(tmp_path, **{key: str(2**53)})))  # the largest accepted


def test_a_nan_total_is_a_usage_error_on_the_command_line(tmp_path, capsys):
    project, _ = _project(tmp_path)
    (project / "train.py").write_text("x = 1\n")
    path = _budget_with(project, total="nan")
    assert main(["verify", "--budget", str(path), "--backend", "emulate"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "b.toml" in line and "`total` must be a finite number >= 0, not nan" in line


def test_a_deeply_nested_budget_is_a_usage_error_not_an_internal_one(tmp_path, capsys):
    path = tmp_path / "deep.toml"
    path.write_text("version = 1\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(BudgetError, match="nested too deeply"):
        budget_file.load(str(path))
    assert main(["verify", "--budget", str(path), "--backend", "emulate"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "deep.toml" in line and "internal error" not in line
