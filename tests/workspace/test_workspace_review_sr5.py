"""SR-5: adversarial review of the workspace copy and its hash (a hostile repository).

Each finding's test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.workspace import Workspace, WorkspaceLimits, tree_sha256
from sandbox_agent.workspace.copy import DEFAULT_MAX_ENTRIES
from sandbox_agent.workspace.safefs import PlannedWrite

ENTRY_LIMIT = 300


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("x = 1\n")
    return repo


@pytest.mark.parametrize("kind", ["symlinks", "empty-folders", "fifos"])
def test_sr5_f3_objects_that_are_not_files_count_against_the_copy_limits(
    tmp_path: Path, kind: str
) -> None:
    # SR-5 F3: only regular files were counted, so a repository of links, empty folders
    # or FIFOs was walked, hashed, copied and listed in ``skipped`` without any bound
    # (checked before the fix: 200 000 links were accepted, 16 s).
    repo = _repo(tmp_path)
    for index in range(ENTRY_LIMIT + 1):
        target = repo / f"o{index}"
        if kind == "symlinks":
            os.symlink("/etc/passwd", target)
        elif kind == "fifos":
            os.mkfifo(target)
        else:
            target.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UsageError, match="entry limit"):
        Workspace.create(repo, base_dir=work, limits=WorkspaceLimits(max_entries=ENTRY_LIMIT))
    assert list(work.iterdir()) == []


def test_the_default_entry_limit_admits_a_large_ordinary_repository() -> None:
    assert WorkspaceLimits().max_entries == DEFAULT_MAX_ENTRIES >= 5 * WorkspaceLimits().max_files


def test_sr5_f4_the_hash_covers_what_is_under_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    # SR-5 F4: a non-UTF-8 name was hashed as "bad_name" with its mode only: a folder's
    # whole subtree and a file's content could change with the "original unchanged"
    # digest staying the same.
    repo = _repo(tmp_path)
    folder = os.path.join(os.fsencode(repo), b"\xff")
    os.mkdir(folder)
    inner = os.path.join(folder, b"inner.py")
    loose = os.path.join(os.fsencode(repo), b"\xfeloose.py")
    for path in (inner, loose):
        with open(path, "wb") as handle:
            handle.write(b"before\n")
    before = tree_sha256(repo)
    for path in (inner, loose):
        with open(path, "wb") as handle:
            handle.write(b"after!\n")
        assert tree_sha256(repo) != before, path
        with open(path, "wb") as handle:
            handle.write(b"before\n")
        assert tree_sha256(repo) == before
    os.mkdir(os.path.join(folder, b"new-empty-folder"))
    assert tree_sha256(repo) != before


def test_sr5_f7_folders_are_0755_whatever_the_controllers_umask(tmp_path: Path) -> None:
    # SR-5 F7: folders were made with mkdir(0o755), which the umask narrows: under
    # umask 077 the copy was 0700 and the sandbox user (uid 10001) could not read it.
    repo = _repo(tmp_path)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "a.py").write_text("a = 1\n")
    previous = os.umask(0o077)
    try:
        with Workspace.create(repo, base_dir=tmp_path) as ws:
            ws.fs.commit([PlannedWrite("new/sub/b.py", ("new", "sub", "b.py"), None, b"b\n")])
            for relative in ("", "pkg", "new", "new/sub"):
                mode = stat.S_IMODE(os.stat(ws.root / relative).st_mode)
                assert mode == 0o755, (relative, oct(mode))
            assert stat.S_IMODE(os.stat(ws.root / "new/sub/b.py").st_mode) == 0o644
    finally:
        os.umask(previous)
