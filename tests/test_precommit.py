"""`.pre-commit-hooks.yaml`, exercised with the real `pre-commit try-repo`.

try-repo clones the hook repository at a commit and pip-installs it into a fresh virtualenv
(libcst comes from the package index), so this is slow: deselect with `-m "not slow"`.
So that uncommitted and untracked work is what gets tested, the test commits a snapshot of
this checkout (tracked and untracked, non-ignored files) into a temporary repository and
points try-repo at that.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HAZARDS = ROOT / "tests" / "data" / "hazards.py"
CLEAN = 'import torch\n\nmodel = torch.nn.Linear(2, 2)\nprint(model(torch.zeros(1, 2)).sum().item())\n'

pytestmark = pytest.mark.slow


def _git(*args: str, cwd: Path) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _pre_commit_argv() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (it is in the dev extra)")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A one-commit repository holding this checkout's files as they are now."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True, text=True)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        pytest.skip(f"{ROOT} is not a git checkout, so there is nothing for try-repo to clone")
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree
        dst = snapshot / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    _git("init", "-q", cwd=snapshot)
    _git("add", "-A", cwd=snapshot)
    _git("commit", "-q", "-m", "snapshot", cwd=snapshot)
    return snapshot


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    # One hook environment for the module, built from scratch: nothing from ~/.cache leaks in.
    return tmp_path_factory.mktemp("pre-commit-home")


def _target_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "project"
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    return repo


def _try_repo(hook_repo: Path, home: Path, repo: Path, hook: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    env.pop("PYTHONPATH", None)  # the hook must run the code pip installed into its own venv
    return subprocess.run(
        [*_pre_commit_argv(), "try-repo", str(hook_repo), hook, "--verbose", *extra],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )


def _expected_lines(path: str, text: str, tmp_path: Path) -> set[str]:
    """`path:line:col: CODE` for each finding our CLI reports on the same text."""
    from torchsync_lint.api import lint_text

    return {f"{path}:{f.line}:{f.column}: {f.code}" for f in lint_text(text, path)}


def _notebook(code: str) -> str:
    cells = [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Train"]},
             {"cell_type": "code", "execution_count": None, "id": "c", "metadata": {}, "outputs": [], "source": code.splitlines(keepends=True)}]
    nb = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


def test_check_hook_fails_on_hazards_and_passes_clean_files(hook_repo, pre_commit_home, tmp_path):
    hazard_text = HAZARDS.read_text(encoding="utf-8")
    repo = _target_repo(tmp_path, {
        "notebooks/train.ipynb": _notebook(hazard_text),  # `types_or: [python, jupyter]`
        "train.py": hazard_text,
        "clean.py": CLEAN,
        "third_party/vendored.py": hazard_text,  # excluded by config, though named by pre-commit
        "notes.txt": "loss.item() in a text file is not Python\n",
        "pyproject.toml": '[tool.torchsync-lint]\nextend-exclude = ["third_party"]\n',
    })
    proc = _try_repo(hook_repo, pre_commit_home, repo, "torchsync-lint", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "torchsync-lint" in out and "Failed" in out
    expected = _expected_lines("train.py", hazard_text, tmp_path)
    assert expected and all(line in out for line in expected), out
    in_notebook = {line.replace("train.py:", "notebooks/train.ipynb:cell 2:", 1) for line in expected}
    assert all(line in out for line in in_notebook), out
    assert "clean.py:" not in out and "vendored.py" not in out and "notes.txt" not in out

    only_clean = _try_repo(hook_repo, pre_commit_home, repo, "torchsync-lint", "--files", "clean.py", "third_party/vendored.py")
    assert only_clean.returncode == 0, only_clean.stdout + only_clean.stderr
    assert "Passed" in only_clean.stdout


def _fixer_available() -> bool:
    return (ROOT / "torchsync_lint" / "fixer.py").is_file()


@pytest.mark.skipif(not _fixer_available(), reason="the fixer (torchsync_lint/fixer.py) is not in this build yet")
def test_fix_hook_runs(hook_repo, pre_commit_home, tmp_path):
    repo = _target_repo(tmp_path, {"clean.py": CLEAN})
    proc = _try_repo(hook_repo, pre_commit_home, repo, "torchsync-lint-fix", "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "clean.py").read_text(encoding="utf-8") == CLEAN
