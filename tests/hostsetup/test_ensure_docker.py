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
