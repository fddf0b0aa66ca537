"""SR-5: adversarial review of the workspace copy and its hash (a hostile repository).

Each finding's test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.workspace import Workspace, WorkspaceLimits, tree_sha256
from sandbox_agent.workspace.copy import DEFAULT_MAX_ENTRIES

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
