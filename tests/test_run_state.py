"""State that must not outlive, or leak out of, the run it belongs to: the run's sessions
installed for lint_file, the summaries a worker computes, the cache's keys, flake8's
sessions, and the configuration `verify` lints with (review of the one pipeline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint import api
from torchsync_lint.config import Config

HOT = (
    "import torch\n\nmodel = torch.nn.Linear(3, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for step in range(10):\n    loss = model(torch.randn(4, 3, device='cuda')).sum()\n    loss.backward()\n"
    "    opt.step()\n    print(loss.item())\n"
)
COLD = "import torch\n\nx = 1\n"


def _project(tmp_path: Path, text: str = HOT) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "train.py").write_text(text)
    return root


def _codes(result) -> list[str]:
    return [f.code for f in result.findings]


@pytest.mark.parametrize("entry", ["check", "fix", "add-noqa"])
def test_an_interrupted_run_leaves_no_sessions_installed(tmp_path, monkeypatch, entry):
    """A KeyboardInterrupt in the middle of a run (one process: the work runs here) must not
    leave the run's sessions behind: a later lint_file would read the old texts."""
    from torchsync_lint import add_noqa
    from torchsync_lint.fixing import command

    root = _project(tmp_path)
    train = str(root / "train.py")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        if entry == "check":
            monkeypatch.setattr(api, "lint_file", interrupted)
            api.lint_paths([str(root)], Config(), jobs=1, use_cache=False)
        elif entry == "fix":
            monkeypatch.setattr(command, "_fix_in_session", interrupted)
            command._fix_files([train], Config(), False, True, None, 1, False)
        else:
            monkeypatch.setattr(add_noqa, "_add_noqa_file", interrupted)
            add_noqa.run_add_noqa(type("Args", (), {"jobs": 1, "no_cache": True})(), Config(), [str(root)])
    monkeypatch.undo()
    assert api._RUN_SESSIONS is None
    assert _codes(api.lint_file(train, Config(), use_cache=False)) == ["TSL101"]
    (root / "train.py").write_text(COLD)  # a later lint sees the file as it is now
    assert _codes(api.lint_file(train, Config(), use_cache=False)) == []


# -- verify lints with the project's configuration, as check and --fix do ------------------------

LOADER = (
    "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\n"
    "loader = DataLoader(ds, num_workers=2, pin_memory=True)\nfor x, y in loader:\n"
    "    x = x.to(device)\n    model(x).sum().backward()\n"
)


@pytest.mark.parametrize(
    "table, expected",
    [
        ("", ["TSL101"]),  # a near miss: the table changes nothing
        ('select = ["TSL3"]\n', []),
        ('[tool.torchsync-lint.per-file-ignores]\n"train.py" = ["TSL101"]\n', []),
    ],
)
def test_verify_expects_what_check_reports_under_the_projects_configuration(tmp_path, monkeypatch, table, expected):
    from torchsync_lint.verify.command import static_expectations

    root = _project(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.torchsync-lint]\n" + table)
    monkeypatch.chdir(root)
    checked = api.lint_paths(["train.py"], api.config_for(["train.py"]), jobs=1, use_cache=False)
    assert _codes(checked[0]) == expected
    expectations, error = static_expectations("train.py", {})
    assert error is None
    assert [e.code for e in expectations if e.static] == expected


@pytest.mark.parametrize("table, fixed", [("", True), ('ignore = ["TSL301"]\n', False)])
def test_verify_fixes_the_script_as_fix_unsafe_fixes_would(tmp_path, table, fixed):
    """The fixed variant the verifier compares is what `--fix --unsafe-fixes` writes: with
    the rule turned off in the project's configuration there is nothing to fix."""
    from torchsync_lint.verify.fixed_variant import fixed_variant
    from torchsync_lint.verify.scripts import Script

    root = _project(tmp_path, LOADER)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.torchsync-lint]\n" + table)
    with fixed_variant(Script(str(root / "train.py"))) as variant:
        if fixed:
            assert "x = x.to(device, non_blocking=True)" in open(variant[0]).read()
        else:
            assert variant is None


def test_a_broken_configuration_is_a_lint_error_for_verify_and_leaves_no_fixed_variant(tmp_path, monkeypatch):
    from torchsync_lint.verify.command import static_expectations
    from torchsync_lint.verify.fixed_variant import fixed_variant
    from torchsync_lint.verify.scripts import Script

    root = _project(tmp_path, LOADER)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.torchsync-lint]\nselect = 3\n")
    monkeypatch.chdir(root)
    _, error = static_expectations("train.py", {})
    assert error is not None and "ConfigError" in error
    with fixed_variant(Script("train.py")) as variant:
        assert variant is None


# -- the cache's keys ---------------------------------------------------------------------------

def test_cache_keys_change_with_the_python_minor_version_and_the_libcst_release(monkeypatch):
    """Import names come from the running interpreter's parser and summaries from libcst's:
    a 3.12-only module read as importing nothing under 3.11 must not be reused by 3.12."""
    import sys

    from torchsync_lint import installed
    from torchsync_lint.project import cache

    def fingerprint() -> str:
        monkeypatch.setattr(cache, "_CODE", None)
        return cache.code_fingerprint()

    here = fingerprint()
    assert fingerprint() == here  # nothing else changes it
    with monkeypatch.context() as m:
        m.setattr(sys, "version_info", (sys.version_info[0], sys.version_info[1] + 1, 0, "final", 0))
        other_python = fingerprint()
    with monkeypatch.context() as m:
        real = installed.installed_version
        m.setattr(installed, "installed_version", lambda name: "0.0.1" if name == "libcst" else real(name))
        other_libcst = fingerprint()
    assert len({here, other_python, other_libcst}) == 3
    assert fingerprint() == here


# -- flake8: each run sees the project as it is then ----------------------------------------------

def test_a_second_flake8_run_in_the_same_process_sees_the_project_as_it_is_now(tmp_path):
    """flake8 calls parse_options once per run: the sessions of an earlier run (an editor or
    a test driving flake8 in one process) must not answer for the next."""
    import ast
    import shutil
    from argparse import Namespace

    from torchsync_lint.flake8 import Plugin

    root = tmp_path / "p"
    shutil.copytree(Path(__file__).parent / "data" / "entry_points" / "helper-item" / "project", root)
    utils, train = root / "utils.py", root / "train.py"

    def flake8_run() -> list[str]:
        Plugin.parse_options(Namespace(torchmetrics_version=None, isolated=True))
        lines = utils.read_text().splitlines(keepends=True)
        return [message.split()[0] for _, _, message, _ in Plugin(ast.parse("".join(lines)), lines, str(utils)).run()]

    try:
        assert flake8_run() == ["TSL101"]  # to_scalar's `.item()` runs per step in train.py
        train.write_text(train.read_text().replace("v = to_scalar(loss)", "v = loss"))
        assert flake8_run() == []
    finally:
        Plugin.codes, Plugin.settings, Plugin.isolated = None, {}, False


def test_a_fifo_under_an_entry_removed_by_another_thread_first_keeps_the_cache_on(tmp_path, monkeypatch):
    """Two threads (the verifier's two lint threads) find the same FIFO under an entry's name;
    the other removes it between our look and our unlink: the entry is still written."""
    import os

    from torchsync_lint.project import cache

    store = cache.Cache(tmp_path)
    key = "ab" + "0" * 62
    entry = store._path("summaries", key)
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    real_lstat = os.lstat

    def lstat_then_the_other_thread_unlinks(path, *args, **kwargs):
        st = real_lstat(path, *args, **kwargs)
        if Path(path) == entry and entry.exists():
            os.unlink(entry)
        return st

    monkeypatch.setattr(cache.os, "lstat", lstat_then_the_other_thread_unlinks)
    store.put("summaries", key, {"x": 1})
    monkeypatch.undo()
    assert store.enabled
    assert store.get("summaries", key) == {"x": 1}


# -- summaries computed in a worker ----------------------------------------------------------------

def test_a_module_changed_while_the_workers_summarise_it_is_not_cached_under_its_old_text(tmp_path, monkeypatch):
    """prepare keys a summary by the text this process read; the worker reads the file again.
    A file saved in between must not have its new summary stored under the old text's hash
    (a later run over the old text would take it)."""
    import shutil

    from torchsync_lint import parallel
    from torchsync_lint.project import deferred, summarizing
    from torchsync_lint.project import session as session_module

    root = tmp_path / "p"
    shutil.copytree(Path(__file__).parent / "data" / "entry_points" / "helper-item" / "project", root)
    utils = root / "utils.py"
    old_text = utils.read_text()
    new_text = "\n\n" + old_text  # every line of to_scalar moves: another summary
    session = session_module.Session(root, Config(), files=[str(root / "train.py"), str(utils)])
    real_map_files = parallel.map_files

    def saved_meanwhile(work, files, jobs=None, **kwargs):
        utils.write_text(new_text)  # the user saves after this process read the project
        return real_map_files(work, files, jobs, **kwargs)

    monkeypatch.setattr(parallel, "map_files", saved_meanwhile)
    session.prepare(2)
    monkeypatch.undo()
    expected = summarizing.analyse_and_summarize("utils.py", old_text)[0]
    assert expected != summarizing.analyse_and_summarize("utils.py", new_text)[0]
    assert deferred.complete(session.summary("utils.py")) == expected  # the session's own text, its own summary
    cached = session.cache.get("summaries", session._summary_key("utils.py"))
    assert cached is None or _fields_agree(cached, expected)  # (an entry holds the fields computed so far)


def _fields_agree(part, whole) -> bool:
    """Every field of ``part`` (a summary with deferred fields absent) is ``whole``'s."""
    if isinstance(part, dict) and isinstance(whole, dict):
        return set(part) <= set(whole) and all(_fields_agree(v, whole[k]) for k, v in part.items())
    if isinstance(part, list) and isinstance(whole, list):
        return len(part) == len(whole) and all(_fields_agree(a, b) for a, b in zip(part, whole))
    return part == whole


def test_a_cache_entry_is_read_only_from_a_regular_file_not_a_link_or_a_fifo(tmp_path):
    import os

    from torchsync_lint.project import cache

    store = cache.Cache(tmp_path)
    good, link, fifo = "aa" + "1" * 62, "aa" + "2" * 62, "aa" + "3" * 62
    store.put("results", good, [1])
    assert store.get("results", good) == [1]
    store.put("results", link, [2])
    elsewhere = tmp_path / "elsewhere.json"
    os.replace(store._path("results", link), elsewhere)  # a valid entry for that key, behind a link
    os.symlink(elsewhere, store._path("results", link))
    os.mkfifo(store._path("results", fifo))
    assert store.get("results", link) is None
    assert store.get("results", fifo) is None  # and does not wait for a writer
    store.put("results", fifo, [3])  # the FIFO makes room for the entry
    assert store.get("results", fifo) == [3] and store.enabled
