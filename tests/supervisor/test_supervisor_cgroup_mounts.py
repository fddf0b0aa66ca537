from __future__ import annotations

from pathlib import Path

import pytest

from repo_files import write_files
from sandbox_supervisor import cgroup
from sandbox_supervisor.mounts import covering_mount, parse_mountinfo, tmpfs_size_bytes


def test_cgroup_v1_with_and_without_swap_accounting(tmp_path: Path) -> None:
    root = write_files(
        tmp_path,
        {
            "memory/memory.limit_in_bytes": "1000\n",
            "memory/memory.memsw.limit_in_bytes": "2000\n",
            "memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
            "pids/pids.max": "max\n",
        },
    )
    assert cgroup.memory_limits(root) == (1000, 2000)
    assert cgroup.pids_limit(root) == cgroup.UNLIMITED
    assert cgroup.oom_kills(root) == 3
    (root / "memory/memory.memsw.limit_in_bytes").unlink()
    assert cgroup.memory_limits(root) == (1000, 1000)


def test_cgroup_v2(tmp_path: Path) -> None:
    root = write_files(
        tmp_path,
        {
            "cgroup.controllers": "memory pids\n",
            "memory.max": "1000\n",
            "memory.swap.max": "0\n",
            "pids.max": "128\n",
            "memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n",
        },
    )
    assert cgroup.memory_limits(root) == (1000, 1000)
    assert cgroup.pids_limit(root) == 128
    assert cgroup.oom_kills(root) == 1
    (root / "memory.swap.max").write_text("max\n")
    assert cgroup.memory_limits(root) == (1000, cgroup.UNLIMITED)


def test_nothing_visible_reads_as_none(tmp_path: Path) -> None:
    assert cgroup.memory_limits(tmp_path) == (None, None)
    assert cgroup.pids_limit(tmp_path) is None
    assert cgroup.oom_kills(tmp_path) is None


def test_covering_mount_takes_the_longest_prefix_and_the_last_mount() -> None:
    mounts = parse_mountinfo(
        "1 0 0:1 / / ro - overlay overlay rw\n"
        "2 1 0:2 / /work rw - ext4 /dev/a rw\n"
        "3 1 0:3 / /work rw - ext4 /dev/b rw\n"
        "4 1 0:4 / /workspace ro - ext4 /dev/c rw\n"
        "5 1 0:5 / /with\\040space ro - tmpfs tmpfs rw,size=64m\n"
    )
    assert covering_mount(mounts, "/workspace/x") == mounts[3]
    assert covering_mount(mounts, "/work/x") == mounts[2]
    assert covering_mount(mounts, "/workshop") == mounts[0]
    assert covering_mount(mounts, "/with space") == mounts[4]
    assert tmpfs_size_bytes(mounts[4]) == 64 * 1024 * 1024
    assert tmpfs_size_bytes(mounts[0]) is None


def test_malformed_mountinfo_is_an_error() -> None:
    with pytest.raises(ValueError, match="malformed"):
        parse_mountinfo("1 0 0:1 / /\n")


def test_octal_escapes_and_sizes_are_read_without_regular_expressions() -> None:
    (mount,) = parse_mountinfo(
        "1 0 0:1 / /a\\040b\\011c\\012d\\134e\\12f\\ ro - tmpfs tmpfs rw,size=1G\n"
    )
    assert mount.mount_point == "/a b\tc\nd\\e\\12f\\"
    assert tmpfs_size_bytes(mount) == 1024**3
    sizes = {"65536k": 64 * 1024 * 1024, "64M": 64 * 1024 * 1024, "4096": 4096}
    for text, want in {**sizes, "": None, "k": None, "64x": None, "6.4m": None}.items():
        (mount,) = parse_mountinfo(f"1 0 0:1 / /t rw - tmpfs tmpfs rw,size={text}\n")
        assert tmpfs_size_bytes(mount) == want, text
