"""SR-8 (issue 20): the workspace copy and its hashes against a hostile repository.

Each test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.workspace import Workspace, WorkspaceLimits, tree_sha256

HUGE_SPARSE_BYTES = 8 * 2**40
"""8 TiB of holes: reading it whole takes hours; its size says "too large" at once."""


def _sparse_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("x = 1\n")
    with (repo / "huge.bin").open("wb") as handle:
        handle.truncate(HUGE_SPARSE_BYTES)
    return repo


def _finishes(work: object) -> BaseException | None:
    """Run ``work`` in a thread; what it raised. Bounded at 60 s (a refusal by size takes
    milliseconds; reading the file takes hours), so a regression fails instead of hanging."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            work()  # type: ignore[operator]
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "still reading the sparse file after 60 s"
    return raised[0] if raised else None


def test_c8_5_a_huge_sparse_file_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    """The original was hashed whole before the copy refused the file by size: 20 GiB
    took a minute, ignoring the wall clock and SIGTERM."""
    repo = _sparse_repo(tmp_path)
    error = _finishes(lambda: Workspace.create(repo, base_dir=tmp_path))
    assert isinstance(error, UsageError)
    assert "huge.bin" in str(error)
    assert not list(tmp_path.glob("sandbox-agent-ws-*"))


def test_c8_5_the_hash_refuses_by_size_with_the_named_limits(tmp_path: Path) -> None:
    repo = _sparse_repo(tmp_path)
    error = _finishes(lambda: tree_sha256(repo, limits=WorkspaceLimits()))
    assert isinstance(error, UsageError)
    os.truncate(repo / "huge.bin", 600)
    limits = WorkspaceLimits(max_file_bytes=1000, max_total_bytes=500)
    with pytest.raises(UsageError, match="more than 500 bytes"):
        tree_sha256(repo, limits=limits)


def test_c8_5_the_copy_counts_the_total_by_size_before_reading(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for number in range(3):
        (repo / f"f{number}.txt").write_bytes(b"x" * 400)
    with pytest.raises(UsageError, match="more than 1000 bytes"):
        Workspace.create(repo, base_dir=tmp_path, limits=WorkspaceLimits(max_total_bytes=1000))


def test_c8_5_an_original_grown_past_the_limits_reads_as_changed_at_the_end(tmp_path: Path) -> None:
    """The end-of-run hash of the original is bounded too: a file grown huge during the
    run makes the original "changed", never an hour of reading."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("x = 1\n")
    with Workspace.create(repo, base_dir=tmp_path) as workspace:
        with (repo / "huge.bin").open("wb") as handle:
            handle.truncate(HUGE_SPARSE_BYTES)
        now: list[str] = []
        assert _finishes(lambda: now.append(workspace.source_sha256_now())) is None
        assert now[0] != workspace.sha256_before


def test_c8_2_nested_vcs_folders_are_left_out_of_the_copy(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in (".git", ".hg", ".svn"):
        (repo / "pkg" / name).mkdir(parents=True)
        (repo / "pkg" / name / "x").write_text("x")
    (repo / "pkg" / "core.py").write_text("x = 1\n")
    with Workspace.create(repo, base_dir=tmp_path) as workspace:
        assert sorted(p.name for p in (workspace.root / "pkg").iterdir()) == ["core.py"]


def test_c8_2_the_workspace_hash_covers_nested_vcs_folders(tmp_path: Path) -> None:
    """What the sandbox mounts is what the reuse hash covers: no name is left out."""
    from sandbox_agent.workspace.hashing import mounted_tree_sha256

    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    before = mounted_tree_sha256(root)
    (root / "pkg" / ".git").mkdir()
    assert mounted_tree_sha256(root) != before
