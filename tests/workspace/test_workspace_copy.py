"""The workspace copy: regular files only, never following or hanging, hashed, labelled, reaped."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.workspace import Workspace, WorkspaceLimits, reap_workspaces, tree_sha256
from sandbox_agent.workspace.owner import OWNER_FILE


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("def f():\n    return 1\n")
    (repo / "run.sh").write_text("echo hi\n")
    (repo / "run.sh").chmod(0o755)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\x00pyc")
    (repo / "orphan.pyc").write_bytes(b"\x00pyc")
    return repo


def test_copy_holds_regular_files_only_and_leaves_out_git_and_bytecode(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    with Workspace.create(repo, base_dir=tmp_path) as ws:
        copied = sorted(str(p.relative_to(ws.root)) for p in ws.root.rglob("*") if p.is_file())
        assert copied == ["pkg/core.py", "run.sh"]
        assert stat.S_IMODE(ws.folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((ws.root / "run.sh").stat().st_mode) == 0o755
        assert stat.S_IMODE((ws.root / "pkg" / "core.py").stat().st_mode) == 0o644
        assert ws.sha256_before == tree_sha256(repo) == ws.source_sha256_now()
        assert ws.files_changed() == []
        assert ws.diff() == ""


def test_owner_label_sits_outside_the_copied_tree(tmp_path: Path) -> None:
    with Workspace.create(make_repo(tmp_path), base_dir=tmp_path) as ws:
        label = json.loads((ws.folder / OWNER_FILE).read_text())
        assert label["pid"] == os.getpid()
        assert label["start_time"]
        assert not (ws.root / OWNER_FILE).exists()
        assert ws.root.parent == ws.folder


def test_close_removes_everything_and_is_idempotent(tmp_path: Path) -> None:
    ws = Workspace.create(make_repo(tmp_path), base_dir=tmp_path)
    ws.close()
    ws.close()
    assert not ws.folder.exists()


@pytest.mark.timeout(20)
def test_symlink_hardlink_and_fifo_are_skipped_never_followed_and_never_hang(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    os.symlink("/etc/passwd", repo / "passwd")
    os.symlink(repo.parent, repo / "up")
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET")
    os.link(outside, repo / "alias.txt")
    os.mkfifo(repo / "pipe")
    sha = tree_sha256(repo)
    with Workspace.create(repo, base_dir=tmp_path) as ws:
        assert sorted(ws.skipped) == [
            ("alias.txt", "hard-linked file"),
            ("passwd", "symbolic link"),
            ("pipe", "device, FIFO or socket"),
            ("up", "symbolic link"),
        ]
        for name in ("passwd", "up", "alias.txt", "pipe"):
            assert not os.path.lexists(ws.root / name)
        assert ws.sha256_before == sha
        assert ws.source_sha256_now() == sha


def test_the_hash_covers_content_mode_and_names(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    first = tree_sha256(repo)
    (repo / "pkg" / "core.py").chmod(0o600)
    second = tree_sha256(repo)
    (repo / "pkg" / "core.py").write_text("changed\n")
    third = tree_sha256(repo)
    (repo / "pkg" / "new.py").write_text("")
    fourth = tree_sha256(repo)
    assert len({first, second, third, fourth}) == 4


def test_diff_and_files_changed_report_edits_in_sorted_order(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    with Workspace.create(repo, base_dir=tmp_path) as ws:
        (ws.root / "pkg" / "core.py").write_text("def f():\n    return 2\n")
        (ws.root / "a_new.py").write_text("x = 1\n")
        (ws.root / "run.sh").unlink()
        assert ws.files_changed() == ["a_new.py", "pkg/core.py", "run.sh"]
        diff = ws.diff()
        assert diff.index("a_new.py") < diff.index("pkg/core.py") < diff.index("run.sh")
        assert "-    return 1\n+    return 2\n" in diff
        assert "--- /dev/null\n+++ b/a_new.py" in diff
        assert ws.source_sha256_now() == ws.sha256_before


@pytest.mark.parametrize(
    ("limits", "needle"),
    [
        (WorkspaceLimits(max_files=1), "more than 1 files"),
        (WorkspaceLimits(max_file_bytes=10), "larger than 10 bytes"),
        (WorkspaceLimits(max_total_bytes=25), "more than 25 bytes"),
    ],
)
def test_limits_refuse_the_whole_copy_with_a_clear_error(
    tmp_path: Path, limits: WorkspaceLimits, needle: str
) -> None:
    with pytest.raises(UsageError, match=needle):
        Workspace.create(make_repo(tmp_path), limits=limits, base_dir=tmp_path)
    assert not list(tmp_path.glob("sandbox-agent-ws-*"))


def test_a_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a folder"):
        Workspace.create(tmp_path / "nope", base_dir=tmp_path)


def test_reaper_removes_workspaces_of_dead_owners_only(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    mine = Workspace.create(repo, base_dir=tmp_path)
    dead = Workspace.create(repo, base_dir=tmp_path)
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    label = json.loads((dead.folder / OWNER_FILE).read_text())
    label.update(pid=int(child.stdout), start_time="1")
    (dead.folder / OWNER_FILE).write_text(json.dumps(label))
    try:
        assert reap_workspaces(tmp_path) == [str(dead.folder)]
        assert mine.folder.exists()
        assert not dead.folder.exists()
    finally:
        mine.close()
        dead.close()
