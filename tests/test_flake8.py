"""The flake8 plugin, run through the real `flake8` executable.

flake8 finds the plugin through the `flake8.extension` entry point of the installed
distribution; the entry point names the module `torchsync_lint.flake8`, which resolves to
whichever `torchsync_lint` is first on sys.path, so PYTHONPATH=<this checkout> tests this code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
HAZARDS = DATA / "hazards.py"

pytest.importorskip("flake8")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(args: list[str], cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_env(), input=stdin, capture_output=True, text=True, timeout=300
    )


def _flake8(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess:
    return _run(["-m", "flake8", "--isolated", "-j", "1", *args], cwd=cwd, stdin=stdin)


_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$")


def _parse(stdout: str) -> list[tuple[str, int, int, str, str]]:
    rows = []
    for line in stdout.splitlines():
        m = _LINE.match(line)
        assert m, f"unexpected flake8 output line: {line!r}"
        rows.append((m["path"], int(m["line"]), int(m["col"]), m["code"], m["msg"]))
    return rows


def _cli_json(*paths: str, cwd: Path = ROOT) -> list[dict]:
    proc = _run(["-m", "torchsync_lint", "check", "--isolated", "--format", "json", *paths], cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _lint_targets() -> list[str]:
    """The test data plus every fixture script in this checkout (other branches add them)."""
    files = [HAZARDS.relative_to(ROOT).as_posix()]
    fixtures = ROOT / "fixtures"
    if fixtures.is_dir():
        files += sorted(p.relative_to(ROOT).as_posix() for p in fixtures.rglob("*.py"))
    return files


def test_flake8_prints_the_same_findings_as_the_cli():
    targets = _lint_targets()
    proc = _flake8("--select", "TSL", *targets)
    assert proc.returncode in (0, 1), proc.stderr
    via_flake8 = {(p, line, col, code) for p, line, col, code, _ in _parse(proc.stdout)}
    via_cli = {(f["path"], f["line"], f["column"], f["code"]) for f in _cli_json(*targets)}
    assert via_cli, "the data must hold findings, or the comparison proves nothing"
    assert via_flake8 == via_cli


def test_flake8_message_and_columns_on_known_lines():
    rows = _parse(_flake8("--select", "TSL", str(HAZARDS.relative_to(ROOT))).stdout)
    by_pos = {(line, col): (code, msg) for _, line, col, code, msg in rows}
    lines = HAZARDS.read_text(encoding="utf-8").splitlines()
    # `running += loss.item()`: the finding starts at the receiver, column 1-based.
    (item_line,) = [i + 1 for i, text in enumerate(lines) if text.strip() == "running += loss.item()"]
    col = lines[item_line - 1].index("loss.item()") + 1
    code, msg = by_pos[(item_line, col)]
    assert code == "TSL101" and "`loss.item()`" in msg
    # A tab and non-ASCII text before a finding: flake8 and we count characters alike.
    (tab_line,) = [i + 1 for i, text in enumerate(lines) if "\t" in text]
    assert (tab_line, lines[tab_line - 1].index("loss.item()") + 1) in by_pos


def test_noqa_is_left_to_flake8_and_torchsync_ignore_still_applies():
    lines = HAZARDS.read_text(encoding="utf-8").splitlines()
    (noqa_line,) = [i + 1 for i, t in enumerate(lines) if "# noqa: TSL101" in t]
    (ignore_line,) = [i + 1 for i, t in enumerate(lines) if "# torchsync: ignore[TSL101]" in t]
    rel = str(HAZARDS.relative_to(ROOT))
    shown = {row[1] for row in _parse(_flake8("--select", "TSL", rel).stdout)}
    assert noqa_line not in shown and ignore_line not in shown
    # flake8 applied the noqa, not us: --disable-noqa brings that finding back ...
    unsuppressed = {row[1] for row in _parse(_flake8("--select", "TSL", "--disable-noqa", rel).stdout)}
    assert unsuppressed == shown | {noqa_line}
    # ... and our own directive, which flake8 does not know, holds in both entry points.
    assert ignore_line not in unsuppressed


def test_multiline_statement_noqa_follows_flake8_semantics(tmp_path):
    # Documented difference: our CLI honours `# noqa` on any line of the statement; flake8
    # reads it on the reported line only. `# torchsync: ignore` works on any line in both.
    src = textwrap.dedent(
        """\
        import torch
        device = torch.device("cuda")
        model = torch.nn.Linear(2, 2).to(device)
        for x in loader:
            loss = model(x.to(device, non_blocking=True)).sum()
            loss.backward()
            a = float(
                loss
            )  # noqa: TSL101
            b = float(
                loss  # torchsync: ignore[TSL101]
            )
            c = float(loss)
        """
    )
    (tmp_path / "t.py").write_text(src)
    cli = {(f["line"], f["code"]) for f in _cli_json("t.py", cwd=tmp_path)}
    flake = {(row[1], row[3]) for row in _parse(_flake8("--select", "TSL", "t.py", cwd=tmp_path).stdout)}
    assert cli == {(13, "TSL101")}
    assert flake == {(7, "TSL101"), (13, "TSL101")}


def test_stdin_and_no_torch_file(tmp_path):
    src = HAZARDS.read_text(encoding="utf-8")
    rows = _parse(_flake8("--select", "TSL", "--stdin-display-name", "train.py", "-", stdin=src).stdout)
    assert rows and {r[0] for r in rows} == {"train.py"}
    (tmp_path / "plain.py").write_text("x = [1, 2]\nfor i in x:\n    print(i)\n")
    proc = _flake8("--select", "TSL", "plain.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


_OPT_IN_RUNNER = textwrap.dedent(
    '''
    import sys
    import libcst as cst
    from torchsync_lint.rule import Rule, load_rules

    load_rules()

    class OptInForTest(Rule):
        """
        ## What it does
        Test-only opt-in rule.
        ## Why is this bad?
        It is not.
        ## Example
        `torch.cuda.synchronize()`
        ## Use instead
        Nothing.
        """

        code = "TSL899"
        name = "test-only-opt-in"
        message = "opt-in finding"
        default_enabled = False

        def visit_Call(self, node):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "synchronize":
                self.report(node)

    from flake8.main.cli import main
    raise SystemExit(main(sys.argv[1:]))
    '''
)


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ([], False),  # off by default: flake8's default ignore list hides it
        (["--extend-select", "TSL899"], True),
        (["--select", "TSL"], True),  # an explicit select beats the implicit default ignore
        (["--select", "TSL1"], False),
    ],
)
def test_opt_in_rules_use_flake8_default_ignore(tmp_path, args, shown):
    runner = tmp_path / "run_flake8.py"
    runner.write_text(_OPT_IN_RUNNER)
    proc = _run([str(runner), "--isolated", "-j", "1", *args, str(HAZARDS.relative_to(ROOT))])
    assert proc.returncode in (0, 1), proc.stderr
    codes = {row[3] for row in _parse(proc.stdout)}
    assert ("TSL899" in codes) is shown
    assert "TSL104" in codes  # the default rules are unaffected


def test_add_options_extends_default_ignore_with_exactly_the_opt_in_rules():
    from torchsync_lint.flake8 import Plugin
    from torchsync_lint.rule import load_rules

    class Recorder:
        def __init__(self):
            self.ignored, self.options = [], []

        def add_option(self, *args, **kwargs):
            self.options.append(args[0])

        def extend_default_ignore(self, codes):
            self.ignored += list(codes)

    rec = Recorder()
    Plugin.add_options(rec)
    assert rec.ignored == [c for c, r in load_rules().items() if not r.default_enabled]
    assert rec.options == ["--torchmetrics-version"]


def test_torchmetrics_version_setting(tmp_path):
    from argparse import Namespace

    from torchsync_lint.flake8 import Plugin

    (tmp_path / "pyproject.toml").write_text('[tool.torchsync-lint]\ntorchmetrics-version = "1.3.0"\n')
    (tmp_path / "sub").mkdir()
    old = os.getcwd()
    os.chdir(tmp_path / "sub")
    try:
        Plugin.parse_options(Namespace(torchmetrics_version=None, isolated=False))
        assert Plugin.settings == {"torchmetrics-version": "1.3.0"}
        Plugin.parse_options(Namespace(torchmetrics_version="1.8.0", isolated=False))
        assert Plugin.settings == {"torchmetrics-version": "1.8.0"}
        Plugin.parse_options(Namespace(torchmetrics_version=None, isolated=True))
        assert Plugin.settings == {"torchmetrics-version": None}
    finally:
        os.chdir(old)
        Plugin.settings = {}


# -- cost: flake8 builds every plugin for every file, whatever --select says ---------------------
_RECORDING_RUNNER = textwrap.dedent(
    '''
    import sys
    import torchsync_lint.flake8  # what flake8 imports at start-up, before any selection is known

    heavy = sorted(m for m in ("libcst", "torchsync_lint.engine", "torchsync_lint.rule") if m in sys.modules)
    calls = []
    try:
        from flake8.main.cli import main
        import torchsync_lint.engine as engine

        real = engine.lint_source
        engine.lint_source = lambda source, path, codes=None, *a, **k: calls.append(sorted(codes)) or real(source, path, codes, *a, **k)
        code = main(sys.argv[1:])
    finally:
        print("HEAVY_AT_IMPORT", heavy, file=sys.stderr)
        print("LINT_CALLS", calls, file=sys.stderr)
    raise SystemExit(code)
    '''
)


def _recorded(tmp_path, *args) -> tuple[list[str], list[list[str]], subprocess.CompletedProcess]:
    runner = tmp_path / "record_flake8.py"
    runner.write_text(_RECORDING_RUNNER)
    # A copy outside any project: no cache, so every run calls the engine (in a project a
    # result the cache holds is not linted again, under flake8 as under `check`).
    hazards = tmp_path / "hazards.py"
    hazards.write_text(HAZARDS.read_text())
    proc = _run([str(runner), "--isolated", "-j", "1", *args, "hazards.py"], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stderr.splitlines() if line.startswith(("HEAVY_AT_IMPORT", "LINT_CALLS")))
    return eval(lines["HEAVY_AT_IMPORT"]), eval(lines["LINT_CALLS"]), proc  # noqa: S307 - our own repr


def test_plugin_import_loads_no_engine():
    # flake8 imports the plugin on every run; libcst and the rules load only when needed.
    proc = _run(["-c", "import sys, torchsync_lint.flake8; print(sorted(m for m in ('libcst', 'torchsync_lint.engine', 'torchsync_lint.rule') if m in sys.modules))"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_no_tsl_code_selected_means_no_lint(tmp_path):
    heavy, calls, proc = _recorded(tmp_path, "--select", "E,W")
    assert heavy == [] and calls == []
    assert "TSL" not in proc.stdout
    heavy, calls, _ = _recorded(tmp_path, "--select", "TSL", "--extend-ignore", "TSL")
    assert calls == []  # every TSL code ignored again


def test_only_the_selected_rules_run(tmp_path):
    _, calls, proc = _recorded(tmp_path, "--select", "TSL101,E")
    assert calls == [["TSL101"]]
    assert {row[3] for row in _parse(proc.stdout) if row[3].startswith("TSL")} == {"TSL101"}
    from torchsync_lint.rule import load_rules

    rules = load_rules()
    _, calls, _ = _recorded(tmp_path, "--select", "TSL1", "--extend-ignore", "TSL105")
    assert calls == [sorted(c for c in rules if c.startswith("TSL1") and c != "TSL105")]
    _, calls, _ = _recorded(tmp_path)  # flake8's default selection: every rule on by default
    assert calls == [sorted(c for c, r in rules.items() if r.default_enabled)]


def test_off_by_default_list_matches_the_registry():
    from torchsync_lint.flake8 import OFF_BY_DEFAULT
    from torchsync_lint.rule import load_rules

    assert sorted(OFF_BY_DEFAULT) == sorted(c for c, r in load_rules().items() if not r.default_enabled)
