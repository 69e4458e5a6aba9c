"""Which files a run lints, as ruff picks them: .gitignore/.ignore, exclude vs extend-exclude,
per-file-ignores by basename and glob, regular files only, a size cap, --show-files and
--show-settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsync_lint.cli import main

HAZARD = """\
import torch
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for x, y in loader:
    loss = model(x.to(device, non_blocking=True)).sum()
    loss.backward()
    total += loss.item()
"""
ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def paths(capsys, *argv) -> set[str]:
    code, out, err = run(capsys, "--format", "json", *argv)
    assert code in (0, 1), err
    # `./` is dropped here so that these tests check selection only (test_cli_plumbing.py
    # checks how paths are printed).
    return {d["path"].removeprefix("./") for d in json.loads(out)}


def write(root: Path, rel: str, text: str = HAZARD) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


@pytest.fixture
def bare_home(tmp_path, monkeypatch):
    """``tmp_path`` as the working directory, with a home of its own (no global git config)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    return tmp_path


@pytest.fixture
def project(bare_home, tmp_path, monkeypatch):
    """A git repository (a `.git` directory is what marks one) with no global git config."""
    monkeypatch.setenv("NO_COLOR", "1")
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    write(repo, "train.py")
    monkeypatch.chdir(repo)
    return repo


# -- .gitignore and friends -------------------------------------------------------------------

def test_gitignored_copies_are_not_linted_unless_told(project, capsys):
    write(project, "wandb/run-20240101/files/code/train.py")
    (project / ".gitignore").write_text("# run logs\nwandb/\n")
    assert paths(capsys, ".") == {"train.py"}
    assert paths(capsys, "--no-respect-gitignore", ".") == {"train.py", "wandb/run-20240101/files/code/train.py"}
    (project / "pyproject.toml").write_text("[tool.torchsync-lint]\nrespect-gitignore = false\n")
    assert paths(capsys, ".") == {"train.py", "wandb/run-20240101/files/code/train.py"}
    assert paths(capsys, "--respect-gitignore", ".") == {"train.py"}  # the flag overrides the file


def test_gitignore_patterns_follow_git(project, capsys):
    (project / ".gitignore").write_text("gen_*.py\n!gen_keep.py\n/top_only.py\nlogs/**/*.py\n")
    for rel in ("gen_a.py", "gen_keep.py", "top_only.py", "sub/top_only.py", "sub/gen_b.py", "logs/a/b/x.py", "logs/y.txt.py"):
        write(project, rel)
    write(project, "sub/.gitignore", "local.py\n")
    write(project, "sub/local.py")
    write(project, "other/local.py")
    assert paths(capsys, ".") == {"train.py", "gen_keep.py", "sub/top_only.py", "other/local.py"}
    # A walk that starts below the repository root still honours the root's .gitignore.
    assert paths(capsys, "sub") == {"sub/top_only.py"}


def test_info_exclude_and_global_excludes_file(project, capsys):
    write(project, "scratch.py")
    write(project, "notes_local.py")
    (project / ".git" / "info" / "exclude").write_text("scratch.py\n")
    write(Path(os.environ["XDG_CONFIG_HOME"]), "git/ignore", "notes_*.py\n")
    assert paths(capsys, ".") == {"train.py"}


def test_global_excludes_file_from_core_excludesfile(project, capsys):
    write(project, "mine.py")
    write(Path(os.environ["HOME"]), ".gitconfig", "[user]\n\tname = x\n[core]\n\texcludesFile = ~/my-ignores\n")
    write(Path(os.environ["HOME"]), "my-ignores", "mine.py\n")
    assert paths(capsys, ".") == {"train.py"}


def test_gitignore_needs_a_repository_but_dot_ignore_does_not(bare_home, tmp_path, capsys):
    write(tmp_path, "a.py")
    write(tmp_path, "b.py")
    (tmp_path / ".gitignore").write_text("a.py\n")
    (tmp_path / ".ignore").write_text("b.py\n")
    assert paths(capsys, ".") == {"a.py"}  # as ruff (and ripgrep): no .git, no .gitignore


def test_a_walk_never_enters_the_tools_own_cache(bare_home, tmp_path, monkeypatch, capsys):
    # Outside a git repository the cache's own `.gitignore` does not apply: the walk prunes the
    # directory by name instead of listing its entries (thousands after a few runs).
    from torchsync_lint.config import Config
    from torchsync_lint.files import discover

    write(tmp_path, "a.py")
    write(tmp_path, ".torchsync_cache/v1/stray.py")
    write(tmp_path, "sub/.torchsync_cache/stray.py")
    write(tmp_path, "torchsync_cache/kept.py")  # near misses: other names are walked
    write(tmp_path, ".torchsync_cache_old/kept.py")
    seen = []
    real_walk = os.walk
    monkeypatch.setattr(os, "walk", lambda *a, **k: ((seen.append(root) or (root, dirs, names)) for root, dirs, names in real_walk(*a, **k)))
    found, errors = discover(["."], Config(root=tmp_path), notes=[])
    assert sorted(found) == [".torchsync_cache_old/kept.py", "a.py", "torchsync_cache/kept.py"] and errors == []
    assert not [root for root in seen if ".torchsync_cache" in Path(root).parts]
    assert paths(capsys, ".") == {"a.py", "torchsync_cache/kept.py", ".torchsync_cache_old/kept.py"}


def test_dot_ignore_beats_gitignore_in_the_same_directory(project, capsys):
    write(project, "keep.py")
    (project / ".gitignore").write_text("keep.py\n")
    (project / ".ignore").write_text("!keep.py\n")
    assert paths(capsys, ".") == {"train.py", "keep.py"}


def test_a_gitignored_file_named_explicitly_is_linted(project, capsys):
    write(project, "wandb/x.py")
    (project / ".gitignore").write_text("wandb/\n")
    assert paths(capsys, "wandb/x.py") == {"wandb/x.py"}
    assert paths(capsys, "wandb") == {"wandb/x.py"}  # a directory named explicitly is walked


# -- exclude and extend-exclude -----------------------------------------------------------------

def test_exclude_replaces_the_defaults_and_extend_exclude_adds(project, capsys):
    write(project, "build/gen.py")
    write(project, "legacy/old.py")
    assert paths(capsys, ".") == {"train.py", "legacy/old.py"}  # build/ is a default exclude
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nexclude = ["legacy"]\n')
    assert paths(capsys, ".") == {"train.py", "build/gen.py"}
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-exclude = ["legacy"]\n')
    assert paths(capsys, ".") == {"train.py"}


def test_exclude_globs_match_basenames_and_relative_paths(project, capsys):
    for rel in ("src/proj/gen_a.py", "src/proj/keep.py", "tests/unit/t.py", "docs/conf.py"):
        write(project, rel)
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-exclude = ["gen_*.py", "tests/**", "docs"]\n')
    assert paths(capsys, ".") == {"train.py", "src/proj/keep.py"}


def test_a_file_named_twice_or_also_found_by_a_walk_is_linted_once(project, capsys):
    """`check src src/a.py ./src/a.py /abs/src/a.py`: one file, one set of findings (the first
    spelling is the one reported)."""
    write(project, "src/a.py")
    code, out, _ = run(capsys, "--format", "json", "src", "src/a.py", "./src/a.py", str(project / "src" / "a.py"))
    assert code == 1
    assert [d["path"] for d in json.loads(out)] == ["src/a.py"]
    code, out, _ = run(capsys, "--format", "json", "./train.py", "train.py")
    assert [d["path"] for d in json.loads(out)] == ["./train.py"]
    code, out, _ = run(capsys, "missing.py", "./missing.py", "train.py")
    assert code == 1 and out.count(": TSL902 ") == 1 and "1 file could not be linted" in out  # (findings too: 1)


# -- per-file-ignores -------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("pattern", "ignored", "linted"),
    [
        ("engine.py", {"src/proj/engine.py", "engine.py"}, {"src/proj/other.py"}),
        ("tests/**", {"tests/a.py", "tests/unit/b.py"}, {"src/tests.py"}),
        ("**/test_*.py", {"test_top.py", "pkg/test_x.py"}, {"pkg/x_test.py"}),
        ("src/*.py", {"src/a.py", "src/deep/b.py"}, {"lib/a.py"}),  # `*` crosses `/`, as in ruff
        ("!src/**", {"lib/a.py", "top.py"}, {"src/a.py"}),  # negation: every file it does not match
    ],
)
def test_per_file_ignores_match_like_ruff(project, capsys, pattern, ignored, linted):
    (project / "train.py").unlink()
    for rel in ignored | linted:
        write(project, rel)
    (project / "pyproject.toml").write_text(f'[tool.torchsync-lint.per-file-ignores]\n"{pattern}" = ["TSL101"]\n')
    assert paths(capsys, ".") == linted


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_per_file_ignores_and_excludes_hold_through_a_symlinked_project(project, capsys, monkeypatch):
    """`check link/`, `link` a symlink to the project (a checkout on a cluster's mounted
    disk): the settings' patterns match the paths inside it as they match from within."""
    for rel in ("tests/a.py", "gen/b.py", "src/c.py"):
        write(project, rel)
    (project / "pyproject.toml").write_text('[tool.torchsync-lint]\nextend-exclude = ["gen"]\nper-file-ignores = {"tests/*" = ["TSL101"]}\n')
    inside = paths(capsys, ".")
    assert inside == {"train.py", "src/c.py"}
    (project.parent / "link").symlink_to(project, target_is_directory=True)
    monkeypatch.chdir(project.parent)
    assert paths(capsys, "link") == {f"link/{rel}" for rel in inside}
    assert paths(capsys, "link/tests/a.py") == set()
    monkeypatch.chdir(project)  # the settings found from inside, the file named through the link
    assert paths(capsys, str(project.parent / "link" / "tests" / "a.py")) == set()
    assert paths(capsys, str(project.parent / "link" / "src" / "c.py")) == {str(project.parent / "link" / "src" / "c.py")}


# -- regular files only, and a size cap ---------------------------------------------------------

SPECIALS = {"fifo.py": None, "zero.py": "/dev/zero", "urandom.py": "/dev/urandom", "stdin.py": "/dev/stdin"}


def _make_specials(directory: Path) -> None:
    for name, target in SPECIALS.items():
        if target is None:
            os.mkfifo(directory / name)
        else:
            (directory / name).symlink_to(target)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev")
def test_a_walk_skips_special_files_with_a_note_and_never_reads_them(tmp_path):
    write(tmp_path, "ok.py")
    _make_specials(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "torchsync_lint", "--isolated", "--format", "json", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr
    assert {d["path"] for d in json.loads(proc.stdout)} == {"ok.py"}
    for name in SPECIALS:
        assert f"skipped {name}:" in proc.stderr
    assert "a FIFO, not a regular file" in proc.stderr and "a character device, not a regular file" in proc.stderr
    assert len(proc.stderr) < 10_000


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev")
def test_special_files_named_explicitly_are_a_clean_tsl902(tmp_path):
    write(tmp_path, "ok.py")
    _make_specials(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "torchsync_lint", "--isolated", "--format", "json", "ok.py", *SPECIALS],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr
    errors = {d["path"]: d for d in json.loads(proc.stdout) if d["code"] == "TSL902"}
    assert set(errors) == set(SPECIALS)


def test_reading_refuses_a_special_file_without_blocking(tmp_path):
    """read_source itself (the API lints what it is given) opens without blocking and checks
    the file type before reading. Run in a child with a deadline: a regression hangs."""
    os.mkfifo(tmp_path / "p.py")
    (tmp_path / "z.py").symlink_to("/dev/zero")
    code = (
        "import sys\nfrom torchsync_lint.files import ReadError, read_source\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n        read_source(path)\n    except ReadError as exc:\n        print(exc.code, exc.message)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "p.py"), str(tmp_path / "z.py")],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.splitlines() == ["TSL902 not a regular file (a FIFO)", "TSL902 not a regular file (a character device)"], proc.stderr


def test_a_file_over_the_size_cap_is_an_error_not_read_whole(tmp_path, monkeypatch, capsys):
    from torchsync_lint import files

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 4096)
    write(tmp_path, "ok.py")
    write(tmp_path, "huge.py", HAZARD + "# padding\n" * 1000)
    code, out, _ = run(capsys, "--isolated", "--format", "json", ".")
    assert code == 1
    assert {(d["path"], d["code"]) for d in json.loads(out)} == {("ok.py", "TSL101"), ("huge.py", "TSL902")}
    assert "too large to lint: more than" in out


# -- --show-files and --show-settings --------------------------------------------------------

def test_show_files_lists_what_would_be_linted(project, capsys):
    write(project, "wandb/x.py")
    write(project, "build/y.py")
    write(project, "pkg/a.py")
    (project / ".gitignore").write_text("wandb/\n")
    code, out, _ = run(capsys, "--show-files", ".")
    assert code == 0
    assert out.splitlines() == ["pkg/a.py", "train.py"]


def test_show_settings_resolves_the_file_and_its_rules(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.torchsync-lint]\nextend-select = ["TSL206"]\nexclude = ["old"]\n'
        '[tool.torchsync-lint.per-file-ignores]\n"train.py" = ["TSL1"]\n'
    )
    code, out, _ = run(capsys, "--show-settings", "train.py")
    assert code == 0
    assert "# Resolved settings for: train.py" in out
    assert f"# Settings path: {project / 'pyproject.toml'}" in out
    assert 'exclude = ["old"]' in out and "respect-gitignore = true" in out
    enabled = out.split("# Rules enabled for this file: ", 1)[1].split("\n", 1)[0].split(", ")
    assert "TSL206" in enabled and not [c for c in enabled if c.startswith("TSL1")]
