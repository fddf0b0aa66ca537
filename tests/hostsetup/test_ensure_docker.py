"""scripts/ensure-docker.sh: a daemon that answers is used as it is, and nothing changes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from sandbox_agent.settings import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "ensure-docker.sh"


@pytest.mark.docker
def test_running_daemon_is_used_unchanged_and_quickly() -> None:
    daemon_json = Path("/etc/docker/daemon.json")
    before = daemon_json.stat().st_mtime_ns if daemon_json.exists() else None
    started = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert (daemon_json.stat().st_mtime_ns if daemon_json.exists() else None) == before
    # Generous: the point is "no install, no restart", not a timing claim.
    assert elapsed < 10


def test_without_daemon_or_root_it_says_what_to_install(tmp_path: Path) -> None:
    # A PATH with a docker that never answers, run as a user that is not root:
    # simulate "not root" by overriding id.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "docker").write_text("#!/bin/sh\nexit 1\n")
    (fake_bin / "id").write_text("#!/bin/sh\necho 1000\n")
    for tool in fake_bin.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin"}
    done = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "not root" in lines[0]
    assert "start Docker" in lines[0]


PIDFILE_LIB = PROJECT_ROOT / "scripts" / "lib" / "pidfile.sh"


def _remove_stale(pid_file: Path, program: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'. "{PIDFILE_LIB}" && remove_stale_pid "$1" "$2"', "-",
         str(pid_file), program],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_pid_file_whose_pid_is_now_another_program_is_removed(tmp_path: Path) -> None:
    # A machine restored with /var/run kept: containerd's pid file named a pid that another
    # program had taken since, dockerd took containerd for running and waited for it until
    # it gave up ('timeout waiting for containerd to start'), so nothing could start.
    other = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "containerd.pid"
        pid_file.write_text(str(other.pid))
        done = _remove_stale(pid_file, "containerd")
        assert done.returncode == 0, done.stderr
        assert not pid_file.exists()
    finally:
        other.kill()
        other.wait()


def test_a_pid_file_of_the_running_program_is_kept(tmp_path: Path) -> None:
    running = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "sleep.pid"
        pid_file.write_text(f"{running.pid}\n")
        done = _remove_stale(pid_file, "sleep")
        assert (done.returncode, done.stderr) == (1, "")
        assert pid_file.exists()
    finally:
        running.kill()
        running.wait()


@pytest.mark.parametrize("content", ["", "not a pid", "999999999"])
def test_a_pid_file_of_no_running_process_is_removed(tmp_path: Path, content: str) -> None:
    pid_file = tmp_path / "dockerd.pid"
    pid_file.write_text(content)
    done = _remove_stale(pid_file, "dockerd")
    assert done.returncode == 0, done.stderr
    assert not pid_file.exists()


def test_no_pid_file_is_nothing_to_do(tmp_path: Path) -> None:
    done = _remove_stale(tmp_path / "absent.pid", "dockerd")
    assert done.returncode == 0, done.stderr
