"""Every writer leaves a file with its old bytes or its new bytes, never a mix (issue 23).

`--fix`, `--add-noqa` and notebook fixes write through atomic.write_atomic, and so does the
cache. A full disk is simulated by ``FullDisk`` in atomic.DISK (the seam the module keeps
for this): writes that would grow the data on disk beyond ``free`` bytes stop there with
ENOSPC, as a file system does. The same cases on a real 64 KiB tmpfs run as root (skipped
otherwise) in test_writes_and_verify_repros.py.
"""

from __future__ import annotations

import errno
import io
import json
import os
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from torchsync_lint import atomic, engine
from torchsync_lint.cli import main
from torchsync_lint.project.cache import CACHE_DIR, Cache

HAZARD = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    total = loss.item()
"""
ARGS = ["--isolated", "--no-cache", "--select", "TSL301,TSL101"]


class FullDisk(atomic.Disk):
    """A disk with ``free`` bytes left: a write that would grow a file past them writes what
    fits, then fails with ENOSPC; overwriting bytes a file already has costs nothing (as on
    ext4 or tmpfs). ``reserves``: whether it has fallocate (else reserving is a no-op)."""

    def __init__(self, free: int, reserves: bool = True, fail_restore: bool = False) -> None:
        self.free = free
        self.reserves = reserves
        self.fail_restore = fail_restore
        self.writes = 0

    def write(self, fd: int, data: bytes) -> None:
        self.writes += 1
        if self.fail_restore and self.writes > 1:
            raise OSError(errno.EIO, "Input/output error")
        size, at = os.fstat(fd).st_size, os.lseek(fd, 0, os.SEEK_CUR)
        growth = max(0, at + len(data) - size)
        if growth > self.free:
            fits = len(data) - (growth - self.free)
            os.write(fd, data[:fits])
            self.free = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.free -= growth
        super().write(fd, data)

    def reserve(self, fd: int, size: int) -> None:
        if self.reserves and size - os.fstat(fd).st_size > self.free:
            raise OSError(errno.ENOSPC, "No space left on device")


@contextmanager
def disk(replacement: atomic.Disk):
    with mock.patch.object(atomic, "DISK", replacement):
        yield replacement


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.rglob("*") if p.name.endswith(atomic.TEMP_SUFFIX) or p.name.startswith(".tmp-")]


# -- a full disk -------------------------------------------------------------------------------

def test_a_full_disk_leaves_a_single_link_file_and_its_directory_as_they_were(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(HAZARD)
    with disk(FullDisk(free=10)):
        code, _, err = run("--fix", *ARGS, str(target))
    assert target.read_text() == HAZARD
    assert code == 1 and f"{target}: cannot write: No space left on device; its fixes were not applied" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_a_hard_linked_file_is_left_alone_when_no_space_can_be_reserved(tmp_path):
    target, other = tmp_path / "train.py", tmp_path / "link.py"
    target.write_text(HAZARD)
    os.link(target, other)
    with disk(FullDisk(free=3)) as d:
        code, _, err = run("--fix", *ARGS, str(target))
    assert target.read_text() == other.read_text() == HAZARD and d.writes == 0
    assert code == 1 and "cannot write: No space left on device; the file was left as it is; its fixes were not applied" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "train.py"]


def test_a_hard_linked_file_whose_in_place_write_fails_gets_its_original_bytes_back(tmp_path):
    """No fallocate: the in-place write itself runs out of space half-way, and the original
    text is written back over the same blocks (what truncated the file in the reproducer)."""
    target, other = tmp_path / "train.py", tmp_path / "link.py"
    target.write_text(HAZARD)
    os.link(target, other)
    with disk(FullDisk(free=3, reserves=False)):
        code, _, err = run("--fix", *ARGS, str(target))
    assert target.read_bytes() == other.read_bytes() == HAZARD.encode()
    assert target.stat().st_nlink == 2
    assert code == 1 and "No space left on device; its original text was put back; its fixes were not applied" in err


def test_when_even_the_original_cannot_be_put_back_the_message_says_so_and_where_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    target, other = tmp_path / "train.py", tmp_path / "link.py"
    target.write_text(HAZARD)
    os.link(target, other)

    class Dying(FullDisk):
        """The first write runs out of space, the second (the original, put back) fails
        outright; the third goes to the temp dir, another file system with room."""

        def write(self, fd, data):
            if self.writes == 1:
                self.writes += 1
                raise OSError(errno.EIO, "Input/output error")
            if self.writes == 2:
                return atomic.Disk.write(self, fd, data)
            super().write(fd, data)

    with disk(Dying(free=3, reserves=False)):
        code, _, err = run("--fix", *ARGS, str(target))
    (kept,) = (tmp_path / "elsewhere").iterdir()
    assert kept.read_text() == HAZARD
    assert code == 1 and "putting its original text back failed too (Input/output error), so the file may be damaged" in err
    assert f"its original text is in {kept}" in err


def test_a_full_disk_leaves_no_partial_cache_entry(tmp_path):
    cache = Cache(tmp_path)
    with disk(FullDisk(free=5)):
        cache.put("lint", "ab" * 32, {"findings": ["x" * 100]})
    assert not cache.enabled  # the run goes on without a cache
    assert leftovers(tmp_path) == []
    assert not list((tmp_path / CACHE_DIR).rglob("*.json"))
    # the .gitignore and CACHEDIR.TAG are whole or absent, never cut off
    for name in (".gitignore", "CACHEDIR.TAG"):
        found = list((tmp_path / CACHE_DIR).rglob(name))
        assert all(p.read_text().endswith("\n") and len(p.read_text()) > 10 for p in found)


def test_the_cache_still_writes_when_there_is_room(tmp_path):
    cache = Cache(tmp_path)
    cache.put("lint", "cd" * 32, {"findings": []})
    assert cache.get("lint", "cd" * 32) == {"findings": []} and leftovers(tmp_path) == []


def test_a_new_file_gets_the_permissions_open_would_give_it(tmp_path):
    old = os.umask(0o027)
    try:
        atomic.write_atomic(str(tmp_path / "new.json"), b"{}")
    finally:
        os.umask(old)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640


# -- edits between the read and the write, and full disks: a property --------------------------

def _notebook(*cells: str) -> str:
    return json.dumps(
        {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{n}", "metadata": {}, "outputs": [],
                    "source": cell.splitlines(keepends=True)} for n, cell in enumerate(cells)],
         "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5},
        indent=1,
    ) + "\n"


CASES = {
    ("fix", "train.py"): HAZARD.encode(),
    ("add-noqa", "train.py"): HAZARD.encode(),
    ("fix", "train.ipynb"): _notebook(HAZARD.split("for x")[0], "for x" + HAZARD.split("for x")[1]).encode(),
    ("add-noqa", "train.ipynb"): _notebook(HAZARD.split("for x")[0], "for x" + HAZARD.split("for x")[1]).encode(),
    ("fix", "crlf.py"): HAZARD.replace("\n", "\r\n").encode(),
    ("add-noqa", "cr.py"): HAZARD.replace("\n", "\r").encode(),
}


def _command(action: str, path: Path) -> list[str]:
    return [f"--{action}", *ARGS, str(path)]


def _intended(action: str, name: str, original: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        path.write_bytes(original)
        run(*_command(action, path))
        return path.read_bytes()


INTENDED = {key: _intended(*key, data) for key, data in CASES.items()}

edits = st.one_of(
    st.none(),  # nobody touches the file
    st.tuples(st.just("append"), st.text(min_size=1, max_size=20)),
    st.tuples(st.just("replace"), st.integers(0, 400), st.text(max_size=10)),
    st.tuples(st.just("truncate"), st.integers(0, 400)),
    st.just(("same bytes",)),  # saved again, unchanged
    st.just(("delete",)),
)


def _edit(path: Path, edit) -> bytes | None:
    """Do ``edit`` to ``path`` as an editor would (a new file over the old); what it holds."""
    data = path.read_bytes()
    kind = edit[0]
    if kind == "delete":
        path.unlink()
        return None
    if kind == "append":
        data += edit[1].encode()
    elif kind == "replace":
        at = min(edit[1], len(data))
        data = data[:at] + edit[2].encode() + data[at + 1 :]
    elif kind == "truncate":
        data = data[: edit[1]]
    with open(path, "r+b") as fh:  # in place: hard links see it too, as they would
        fh.write(data)
        fh.truncate()
    return data


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(sorted(CASES)),
    edit=edits,
    when=st.sampled_from(["while linting", "while writing"]),
    free=st.one_of(st.none(), st.integers(0, 600)),
    reserves=st.booleans(),
    linked=st.booleans(),
)
def test_the_bytes_on_disk_are_the_users_or_the_intended_never_a_mix(case, edit, when, free, reserves, linked):
    action, name = case
    original, intended = CASES[case], INTENDED[case]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        path.write_bytes(original)
        if linked:
            os.link(path, Path(directory) / "other_name")
        users: list[bytes | None] = []

        def edit_once():
            if edit is not None and not users:
                users.append(_edit(path, edit))

        real_lint = engine.lint_source

        def lint_source(*args, **kwargs):
            if when == "while linting":
                edit_once()
            return real_lint(*args, **kwargs)

        class Disk(FullDisk):
            def write(self, fd, data):
                # An in-place rewrite (hard links) cannot see an edit made during its own
                # write: that window is documented, not tested.
                if when == "while writing" and not linked:
                    edit_once()
                super().write(fd, data)

        with mock.patch.object(engine, "lint_source", lint_source), disk(Disk(free if free is not None else 1 << 30, reserves)):
            code, _, err = run(*_command(action, path))
        final = path.read_bytes() if path.exists() else None
        theirs = users[0] if users else original
        if final == intended and intended != original:
            event("written")
            assert theirs == original  # written only over exactly what was read
        else:
            event("left as it was: " + ("changed on disk" if "changed on disk" in err else "no space" if "No space" in err else "other"))
            assert final == theirs, f"a mix: {final!r}"
            if intended != theirs:
                assert code != 0
                assert "changed on disk" in err or "No space left on device" in err, err
        if linked and final is not None:
            assert (Path(directory) / "other_name").read_bytes() == final
        assert leftovers(Path(directory)) == []


def test_the_property_sees_refusals_and_writes_alike():
    """The property's cases exercise the fix and the refusal: each case has an intended
    result different from the original."""
    assert all(INTENDED[key] != CASES[key] for key in CASES)


def test_fix_on_a_symlink_writes_through_it(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(HAZARD)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    code, _, _ = run("--fix", *ARGS, str(link))
    assert link.is_symlink() and "non_blocking=True" in target.read_text() and code == 1


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit])
def test_an_in_place_write_interrupted_half_way_puts_the_original_back_and_reraises(tmp_path, interruption):
    """Ctrl-C (or sys.exit from a signal handler) between two chunks of the in-place write
    of a hard-linked file: the original bytes are written back before the interruption
    goes on, never a file half old, half new."""
    target, other = tmp_path / "big.py", tmp_path / "link.py"
    original = b"".join(b"x_%04d = %04d\n" % (i, i) for i in range(500))  # 6000 bytes
    target.write_bytes(original)
    os.link(target, other)

    class Interrupted(atomic.Disk):
        def __init__(self):
            self.writes = 0

        def write(self, fd, data):
            self.writes += 1
            if self.writes == 1:
                os.write(fd, data[:100])
                raise interruption()
            super().write(fd, data)

    with disk(Interrupted()) as d, pytest.raises(interruption):
        atomic.write_atomic(str(target), original.replace(b"x_", b"y_"))
    assert d.writes == 2  # the original was written back
    assert target.read_bytes() == other.read_bytes() == original
