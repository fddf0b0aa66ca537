"""Owner labels: a live controller is never reaped; a dead one, or a reused pid, is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from sandbox_agent.sandbox.docker.owner import owner_is_dead, owner_value, process_start_time


def test_this_process_is_alive() -> None:
    assert not owner_is_dead(owner_value())


def test_a_finished_process_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start_time(child.pid)
    child.wait()
    assert owner_is_dead(f"{socket.gethostname()}:{child.pid}:{start or '1'}")


def test_a_reused_pid_counts_as_dead() -> None:
    assert owner_is_dead(f"{socket.gethostname()}:{os.getpid()}:1")


def test_another_host_or_garbage_is_never_reaped() -> None:
    assert not owner_is_dead(f"not-{socket.gethostname()}:1:1")
    assert not owner_is_dead("garbage")
    assert not owner_is_dead("")
