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
