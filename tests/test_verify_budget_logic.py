"""The sync budget's pure logic (no torch, no subprocess): the TOML writer and reader, the
period of a line, the comparison with a budget, the kinds, the call sites, and the reports.
End to end (scripts replayed): tests/test_verify_budget.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from torchsync_lint.verify import budget_file, runner, sites
from torchsync_lint.verify import evidence as ev
from torchsync_lint.verify.budget import (
    FELL,
    ROSE,
    SAME,
    UNSEEN,
    BudgetFile,
    BudgetReport,
    LineCount,
    Period,
    ScriptBudget,
    ScriptResult,
    budget_kind,
    compare,
    measure,
    pair_lines,
    period_of,
    total_of,
)
from torchsync_lint.verify.budget_file import BudgetError
from torchsync_lint.verify.budget_report import render
from torchsync_lint.verify.evidence import RuntimeEvent
from torchsync_lint.verify.steady_state import OPTIMIZER, SteadyWindow

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def _line(line=10, kind="host-read", count=1, every=1, exact=True, file="train.py", function="main", code="loss.item()", via=None):
    return LineCount(file, line, function, code, kind, count, Period(every, exact), via)


def _script(lines, tolerance=0, window=8, total=None, **overrides):
    fields = dict(path="train.py", args=["--epochs", "1"], steps=8, warmup=2, window=window, backend="emulate", tolerance=tolerance)
    fields.update(overrides)
    return ScriptBudget(**fields, total=total_of(lines) if total is None else total, lines=list(lines))


class _Seen:
    """A Measurement stand-in: what compare() reads."""

    def __init__(self, lines, window=8):
        self.lines, self.window = list(lines), window


# -- the file -----------------------------------------------------------------------------------
def _awkward_budget() -> BudgetFile:
    lines = [
        _line(57, "metric", 2, 4, code='acc.update(p, y) if "x" else None', via="torchmetrics/utilities/data.py:206 _bincount"),
        _line(12, "truthiness", 1, 1, file="pkg/engine.py", function="Trainer.step", code="if torch.isnan(loss):"),
        _line(3, "format", 1, 9, exact=False, code='print(f"tab\\there \\\\ \u00e9 \x01 \x7f")'),
    ]
    return BudgetFile("b.toml", {
        "train.py": _script(lines, tolerance=0.5),
        "dir with space/é.py": _script([], args=["--name", 'a "quoted" \\ arg', ""], backend="cuda"),
        "plain_name": _script([], tolerance=2),
    })


def test_the_writer_round_trips_through_tomllib_byte_for_byte(tmp_path):
    budget = _awkward_budget()
    text = budget_file.dumps(budget)
    path = tmp_path / "b.toml"
    path.write_text(text, encoding="utf-8")
    loaded = budget_file.load(str(path))
    assert budget_file.dumps(loaded) == text
    script = loaded.scripts["train.py"]
    assert script.tolerance == 0.5 and script.args == ["--epochs", "1"] and script.total == 1.611  # 2/4 + 1 + 1/9
    by_line = {line.line: line for line in script.lines}
    assert by_line[3].code == 'print(f"tab\\there \\\\ \u00e9 \x01 \x7f")' and by_line[3].period == Period(9, False)
    assert by_line[57].via == "torchmetrics/utilities/data.py:206 _bincount" and by_line[57].period == Period(4)
    assert loaded.scripts["dir with space/é.py"].args == ["--name", 'a "quoted" \\ arg', ""]
    assert isinstance(loaded.scripts["plain_name"].tolerance, int)  # `tolerance = 2` stays an integer
    # Stable order: scripts by path, lines by file then line, whatever order they came in.
    shuffled = _awkward_budget()
    shuffled.scripts = dict(reversed(list(shuffled.scripts.items())))
    shuffled.scripts["train.py"].lines.reverse()
    assert budget_file.dumps(shuffled) == text
    assert text.index('file = "pkg/engine.py"') < text.index('file = "train.py", line = 3,') < text.index("line = 57")


def test_write_leaves_an_unchanged_file_untouched(tmp_path):
    path = tmp_path / "sub" / "b.toml"
    budget = _awkward_budget()
    assert budget_file.write(budget, str(path)) is True
    stamp = path.stat().st_mtime_ns
    assert budget_file.write(budget_file.load(str(path)), str(path)) is False
    assert path.stat().st_mtime_ns == stamp
    assert [p.name for p in path.parent.iterdir()] == ["b.toml"]  # no temporary file left behind


def test_the_committed_fixture_budget_is_canonical():
    """budgets/fixtures.toml (checked by .ci/run) is exactly what the writer writes for it."""
    path = ROOT / "budgets" / "fixtures.toml"
    loaded = budget_file.load(str(path))
    assert budget_file.dumps(loaded) == path.read_text(encoding="utf-8")
    assert "fixtures/clean/host_sync_clean.py" in loaded.scripts
    assert loaded.scripts["fixtures/clean/host_sync_clean.py"].lines == []
    assert any(line.kind == "metric" and "_bincount" in (line.via or "") for s in loaded.scripts.values() for line in s.lines)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = 1\n[scripts.\n", "not valid TOML"),
        ("scripts = {}\n", "`version = 1` expected"),
        ("version = 2\n", "`version = 1` expected"),
        ("version = 1\nextra = 3\n", "unknown top-level key(s) extra"),
        ('version = 1\n[scripts."t.py"]\nargs = []\n', "scripts.\"t.py\": `steps` is missing"),
        ('version = 1\n[scripts."t.py"]\nargs = "x"\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\n', "`args` must be a list"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 0\nwarmup = 2\nwindow = 5\nbackend = "emulate"\n', "`steps` must be an integer >= 1"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\ntolerance = -1\n', "`tolerance` must be a finite number >= 0"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\nsyncs = [{ file = "t.py", line = 3, kind = "oops", count = 1, every = 1 }]\n', "unknown kind 'oops'"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\nsyncs = [{ file = "t.py", line = 3, kind = "format", count = 1 }]\n', "exactly one of `every`"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\nsyncs = [{ file = "t.py", line = 3, kind = "format", count = true, every = 1 }]\n', "`count` must be an integer"),
        ('version = 1\n[scripts."t.py"]\nargs = []\nsteps = 8\nwarmup = 2\nwindow = 5\nbackend = "emulate"\nsyncs = [1]\n', "syncs[0]: must be a table"),
    ],
)
def test_a_malformed_budget_is_an_error_that_says_where(tmp_path, text, message):
    path = tmp_path / "b.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BudgetError) as error:
        budget_file.load(str(path))
    assert message in str(error.value) and str(path) in str(error.value)


def test_missing_and_undecodable_budget_files(tmp_path):
    with pytest.raises(BudgetError, match="no such budget file .*--update-budget"):
        budget_file.load(str(tmp_path / "absent.toml"))
    (tmp_path / "latin1.toml").write_bytes(b"version = 1\n# caf\xe9\n")
    with pytest.raises(BudgetError, match="not UTF-8"):
        budget_file.load(str(tmp_path / "latin1.toml"))
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(BudgetError, match="cannot read"):
        budget_file.load(str(tmp_path / "dir.toml"))


# -- periods and kinds --------------------------------------------------------------------------
def test_the_period_of_a_line_does_not_depend_on_how_many_steps_ran():
    fired = lambda last, every: [s for s in range(1, last) if s % every == 0]  # noqa: E731
    # `if step % 5 == 0` over 10, 12, 25 or 100 observed steps: always "every 5 steps".
    assert {period_of(fired(last, 5), 1, last) for last in (11, 13, 26, 101)} == {Period(5)}
    assert period_of(list(range(1, 9)), 1, 9) == Period(1)
    # Seen once (at step 5 of [1, 8)): it did not sync in the 4 steps before nor the 2 after.
    assert period_of([5], 1, 8) == Period(5, exact=False)
    assert period_of([2], 1, 10) == Period(8, exact=False)
    # A rate would have flapped: 2 syncs in 10 steps, 3 in 12.
    assert len(fired(11, 5)) / 10 != len(fired(13, 5)) / 12


@pytest.mark.parametrize(
    ("kind", "op", "site", "expected"),
    [
        (ev.SCALAR_READ, "aten::_local_scalar_dense", {"construct": "item"}, "host-read"),
        (ev.SCALAR_READ, "aten::_local_scalar_dense", {"construct": "__bool__"}, "truthiness"),
        (ev.SCALAR_READ, "aten::_local_scalar_dense", {"construct": "__format__"}, "format"),
        (ev.HOST_READ, "Tensor.__repr__", {}, "format"),
        (ev.HOST_READ, "Tensor.tolist", {}, "host-read"),
        (ev.D2H_COPY, "Tensor.cpu", {}, "host-read"),
        (ev.EXPLICIT_SYNC, "torch.cuda.synchronize", {}, "synchronize"),
        (ev.DYNAMIC_SHAPE, "aten::nonzero", {}, "dynamic-shape"),
        (ev.BINCOUNT, "aten::bincount", {}, "dynamic-shape"),
        (ev.BINCOUNT, "aten::bincount", {"modules": ["torchmetrics/utilities/data.py", "torchmetrics/metric.py"]}, "metric"),
        (ev.D2H_COPY, "Tensor.cpu", {"modules": ["torch/utils/tensorboard/_convert_np.py"]}, "logger"),
        (ev.SCALAR_READ, "aten::_local_scalar_dense", {"modules": ["lightning/fabric/utilities/apply_func.py", "lightning/pytorch/trainer/connectors/logger_connector/result.py"]}, "logger"),
        (ev.SCALAR_READ, "aten::_local_scalar_dense in GradScaler.step", {"modules": ["torch/amp/grad_scaler.py"]}, "host-read"),
        (ev.H2D_BLOCKING, "Tensor.to", {}, "blocking-copy"),
        (ev.H2D_PAGEABLE, "Tensor.to", {}, "blocking-copy"),
        (ev.DISTRIBUTED_SYNC, "aten::_local_scalar_dense in torchmetrics Metric._sync_dist", {"modules": ["torchmetrics/metric.py"]}, "distributed"),
        (ev.DEVICE_SYNC, "stream sync", {}, "device-sync"),
        (ev.DATALOADER_MAIN_PROCESS, "DataLoader.__iter__", {}, None),
        (ev.EMULATED, "torch.compile", {}, None),
    ],
)
def test_budget_kinds(kind, op, site, expected):
    assert budget_kind(kind, op, site) == expected


# -- measuring ----------------------------------------------------------------------------------
def _site(file, line, function="f", code="x.item()", **extra):
    return {"file": file, "line": line, "function": function, "code": code, "construct": "item", "library": None, "entry": None,
            "modules": [], "chain": [[file, line, function]], **extra}


def test_measure_counts_steady_steps_per_line_and_kind(tmp_path):
    root = str(tmp_path)
    sites_table = [
        _site(f"{root}/helpers.py", 5),
        _site(f"{root}/train.py", 9, "main", "m.update(p, y)", construct=None, library=["torchmetrics/utilities/data.py", 206, "_bincount"],
              entry=["torchmetrics/metric.py", 549, "wrapped"], modules=["torchmetrics/utilities/data.py", "torchmetrics/metric.py"]),
        _site(f"{root}/train.py", 20, "main", "print(total.item())"),
    ]
    events, where = [], []
    for step in range(0, 11):  # 2 reads per step at helpers.py:5, one bincount every 3 steps
        events += [RuntimeEvent(5, ev.SCALAR_READ, "aten::_local_scalar_dense", step)] * 2
        where += [0, 0]
        if step % 3 == 0:
            events.append(RuntimeEvent(9, ev.BINCOUNT, "aten::bincount", step))
            where.append(1)
        events.append(RuntimeEvent(9, ev.DATALOADER_MAIN_PROCESS, "DataLoader.__iter__", step))  # not a sync
        where.append(1)
    events.append(RuntimeEvent(20, ev.SCALAR_READ, "aten::_local_scalar_dense", 10))  # teardown step: not steady
    where.append(2)
    seen = measure(events, where, sites_table, SteadyWindow(OPTIMIZER, total=11, warmup=2), root)
    assert seen.window == 8 and seen.observed == (1, 10)
    assert [(line.file, line.line, line.kind, line.count, line.period) for line in seen.lines] == [
        ("helpers.py", 5, "host-read", 2, Period(1)),
        ("train.py", 9, "metric", 1, Period(3)),
    ]
    metric = seen.lines[1]
    assert metric.via == "torchmetrics/utilities/data.py:206 _bincount"
    assert metric.chain == ("train.py:9 main", "torchmetrics/metric.py:549 wrapped", "torchmetrics/utilities/data.py:206 _bincount")
    assert metric.where() == "train.py:9 (torchmetrics/utilities/data.py:206 _bincount)"
    assert total_of(seen.lines) == 2.333


# -- comparing ----------------------------------------------------------------------------------
def _rows(budget_lines, now_lines, tolerance=0, budget_window=8, now_window=8):
    comparison = compare(_script(budget_lines, tolerance=tolerance, window=budget_window), _Seen(now_lines, now_window))
    return comparison, [(row.status, row.change) for row in comparison.rows]


def test_unchanged_lines_are_the_same_even_when_they_moved():
    comparison, rows = _rows([_line(10), _line(20, "format", code="print(x)")], [_line(13), _line(23, "format", code="print(x)")])
    assert [status for status, _ in rows] == [SAME, SAME] and not comparison.rose and not comparison.fell


def test_a_new_line_or_more_syncs_or_a_shorter_period_rose():
    comparison, rows = _rows([_line(10)], [_line(10), _line(11, "metric", code="acc.update(p, y)")])
    assert rows[0] == (ROSE, "new: 1 per step") and comparison.rose and comparison.total_rose
    _, rows = _rows([_line(10, count=1)], [_line(10, count=3)])
    assert rows == [(ROSE, "1 -> 3 syncs per step")]
    _, rows = _rows([_line(10, every=5)], [_line(10, every=1)])
    assert rows == [(ROSE, "every 5 steps -> every step")]
    _, rows = _rows([_line(10, every=8, exact=False)], [_line(10, every=3)])
    assert rows == [(ROSE, "once in >= 8 steps -> every 3 steps")]


def test_fewer_syncs_or_a_gone_line_fell():
    comparison, rows = _rows([_line(10), _line(11, code="y.item()")], [_line(10)])
    assert rows[0] == (FELL, "gone (was 1 per step)") and comparison.fell and not comparison.rose
    _, rows = _rows([_line(10, count=2)], [_line(10, count=1)])
    assert rows == [(FELL, "2 -> 1 syncs per step")]
    _, rows = _rows([_line(10, every=1)], [_line(10, every=4)])
    assert rows == [(FELL, "every step -> every 4 steps")]


def test_what_one_run_could_not_see_is_unseen_not_a_change():
    # A gated line of period 12 the budget's 8 steps could not have seen: not a failure.
    comparison, rows = _rows([], [_line(10, every=12)], budget_window=8, now_window=30)
    assert rows == [(UNSEEN, "new, 1 every 12 steps: longer than the 8 steps the budget observed")] and not comparison.rose
    # A budgeted period-5 line a 3-step run cannot see is not "gone", and the total allows for it.
    comparison, rows = _rows([_line(10, every=5), _line(11, code="y.item()")], [_line(11, code="y.item()")], now_window=3)
    assert rows[0][0] == UNSEEN and not comparison.fell and comparison.total_budget == comparison.total_now == 1.0
    # Seen once by a shorter run: consistent with the budget's exact period.
    _, rows = _rows([_line(10, every=5)], [_line(10, every=4, exact=False)], now_window=4)
    assert rows == [(SAME, "1 once in >= 4 steps")]


def test_the_tolerance_applies_to_each_line_and_to_the_total():
    budget = [_line(10), _line(11, code="b.item()"), _line(12, code="c.item()")]
    now = [_line(10, count=2), _line(11, count=2, code="b.item()"), _line(12, count=2, code="c.item()")]
    comparison, rows = _rows(budget, now, tolerance=1)
    assert all(status == SAME for status, _ in rows)  # each +1 is within the tolerance...
    assert comparison.total_rose and comparison.rose  # ...but +3 per step in all is not
    comparison, _ = _rows(budget, [_line(10, count=2), *budget[1:]], tolerance=1)
    assert not comparison.rose


def test_lines_are_paired_by_text_then_by_place():
    old = [_line(10, code="a.item()"), _line(30, code="b.item()"), _line(50, function="g", code="c.item()")]
    new = [_line(12, code="b.item()"), _line(10, code="a.detach().item()"), _line(55, function="g", code="c.cpu().item()")]
    pairs = {(o.line if o else None, n.line if n else None) for o, n in pair_lines(old, new)}
    # b moved (matched by text); a was edited in place (same line); c was edited and moved, the
    # only host read left in g on both sides.
    assert pairs == {(30, 12), (10, 10), (50, 55)}


# -- call sites ---------------------------------------------------------------------------------
def test_code_text_drops_a_trailing_comment_only():
    assert sites.code_text("    x = loss.item()  # expect: TSL101\n") == "x = loss.item()"
    assert sites.code_text('print("# not a comment", t)\n') == 'print("# not a comment", t)'
    assert sites.code_text("    f(a,  # first\n") == "f(a,"  # the first line of a statement
    assert sites.code_text('    x = """a # b\n') == 'x = """a # b'  # inside a string: kept whole


def test_site_finder_names_the_project_line_and_the_library_frame(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    library = tmp_path / "venv" / "lib" / "site-packages" / "fakelib"
    project.mkdir()
    library.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (library / "__init__.py").write_text("")
    (library / "core.py").write_text("def deep(finder):\n    return finder.locate()\n\n\ndef api(finder):\n    return deep(finder)\n")
    (project / "helpers.py").write_text("import fakelib.core\n\n\ndef step(finder):\n    return fakelib.core.api(finder)  # a library call\n")
    (project / "train.py").write_text("import helpers\n\n\ndef main(finder):\n    return helpers.step(finder)\n")
    monkeypatch.syspath_prepend(str(library.parent))
    monkeypatch.syspath_prepend(str(project))
    for name in ("fakelib", "fakelib.core", "helpers", "train"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import train  # noqa: PLC0415 - the module written above

    finder = sites.SiteFinder(str(project / "train.py"), construct=lambda: "item")
    index = train.main(finder)
    assert train.main(finder) == index  # interned
    site = finder.table[index]
    assert (site["file"], site["line"], site["function"], site["code"]) == (str(project / "helpers.py"), 5, "step", "return fakelib.core.api(finder)")
    assert site["library"] == ["fakelib/core.py", 2, "deep"] and site["entry"] == ["fakelib/core.py", 6, "api"]
    assert site["modules"] == ["fakelib/core.py"] and site["construct"] == "item"
    assert [frame[1:] for frame in site["chain"]] == [[5, "main"], [5, "step"]]
    assert finder.place(sites.__file__) == sites.OURS and finder.place(json.__file__) == sites.STDLIB


# -- reports ------------------------------------------------------------------------------------
def _report(tmp_path) -> BudgetReport:
    (tmp_path / "pyproject.toml").write_text("")
    via = "torchmetrics/utilities/data.py:206 _bincount"
    budget = _script([_line(10), _line(30, every=4, code="print(loss.item())")])
    new = _line(12, "metric", code="acc.update(p, y)", file="helpers.py", function="after_step", via=via)
    new.chain = ("train.py:40 <module>", "helpers.py:12 after_step", via)
    measured = _script([_line(10), new, _line(31, every=4, code="print(loss.item())")])
    rose = ScriptResult("train.py", "rose", "", compare(budget, _Seen(measured.lines)), budget, measured)
    fell = ScriptResult("eval.py", "fell", "", compare(measured, _Seen(budget.lines)), measured, budget)
    crashed = ScriptResult("crash.py", "error", "Traceback...\nRuntimeError: boom & <bad>\x1b[0m")
    return BudgetReport(str(tmp_path / "syncs.toml"), "emulate", False, [rose, fell, crashed])


def test_reports_name_the_line_that_rose_and_the_library_frame(tmp_path):
    report = _report(tmp_path)
    assert report.exit_code == 2  # an error wins over a rise
    text = render(report, "text")
    assert "helpers.py:12 (torchmetrics/utilities/data.py:206 _bincount)  metric" in text
    assert "calls: train.py:40 <module> > helpers.py:12 after_step > torchmetrics/utilities/data.py:206 _bincount" in text
    assert "moved from line 30" in text and "RuntimeError: boom" in text
    data = json.loads(render(report, "json"))
    assert [s["status"] for s in data["scripts"]] == ["rose", "fell", "error"]
    rose = [line for line in data["scripts"][0]["lines"] if line["status"] == "rose"]
    assert rose[0]["now"]["via"].endswith("_bincount") and rose[0]["now"]["file"] == "helpers.py"
    github = render(report, "github").splitlines()
    assert github[0].startswith("::error file=helpers.py,line=12,title=sync budget%3A metric rose::metric sync rose: new: 1 per step.")
    assert any(line.startswith("::notice file=helpers.py,line=12,") and "--update-budget to lower" in line for line in github)
    assert any(line.startswith("::error file=crash.py,title=sync budget%3A error::") and "%0A" in line for line in github)
    suite = ET.fromstring(render(report, "junit")).find("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("errors") == "1"
    assert "helpers.py:12" in cases["train.py"].find("failure").get("message")
    assert cases["eval.py"].find("failure") is None and "gone" in cases["eval.py"].find("system-out").text
    assert cases["crash.py"].find("error").get("message") == "RuntimeError: boom & <bad>\ufffd[0m"


def test_sarif_is_valid_and_points_at_the_line_that_rose(tmp_path):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")
    log = json.loads(render(_report(tmp_path), "sarif"))
    jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))).validate(log)
    (run,) = log["runs"]
    (result,) = run["results"]
    assert result["ruleId"] == "sync-budget/metric" and run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "sync-budget/metric"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "helpers.py", "uriBaseId": "%SRCROOT%"} and location["region"] == {"startLine": 12}
    assert run["invocations"][0]["executionSuccessful"] is False  # the crashed script


def test_a_cuda_run_writes_the_same_budget_format(tmp_path):
    """The cuda backend's attribution record carries the same sites (cuda/harness.py); a fake
    one here, since the real run needs a GPU (tests/test_verify_budget.py runs it on one)."""
    root = str(tmp_path)
    record = {
        "backend": "cuda", "step_basis": "optimizer", "total_steps": 11, "excluded_steps": [], "exit_code": 0, "error": None,
        "stopped": "steps", "stop_note": "stopped by the step clock after 10 optimizer steps",
        "events": [{"line": 7, "kind": ev.SCALAR_READ, "op": "aten::_local_scalar_dense (stream sync)", "step": s} for s in range(11)]
        + [{"line": 9, "kind": ev.DEVICE_SYNC, "op": "stream sync", "step": s} for s in range(0, 11, 3)],
        "sites": [_site(f"{root}/train.py", 7, "main", "loss.item()", construct=None), _site(f"{root}/train.py", 9, "main", "log(x)", construct=None)],
        "event_sites": [0] * 11 + [1] * 4,
        "sync_signals": {},
    }
    run = runner._classify(record, 0, "", "", 1.0, require_result=False)
    assert run.status == runner.OK
    seen = measure(run.events, run.extra["event_sites"], run.extra["sites"], run.window(2), root)
    entry = ScriptBudget("train.py", [], 8, 2, seen.window, "cuda", 0, total_of(seen.lines), lines=seen.lines)
    path = tmp_path / "syncs.toml"
    budget_file.write(BudgetFile(str(path), {"train.py": entry}), str(path))
    loaded = budget_file.load(str(path))
    assert budget_file.dumps(loaded) == path.read_text(encoding="utf-8")
    (script,) = loaded.scripts.values()
    assert script.backend == "cuda" and script.window == 8
    assert [(line.line, line.kind, line.count, line.period) for line in script.lines] == [(7, "host-read", 1, Period(1)), (9, "device-sync", 1, Period(3))]


def test_the_budget_modules_import_without_torch():
    """The parent side of the budget runs no torch (only the replayed scripts do)."""
    code = (
        "import sys\n"
        "import torchsync_lint.verify.budget_command, torchsync_lint.verify.budget_report, torchsync_lint.verify.sites\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch.'))[:5]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
