"""Unsticking a container whose runtime processes outlived it.

Seen here under runsc: when a sandbox dies during start (a fork bomb, PID 1 killed
from outside), containerd can keep the task in ``created`` while runsc says
``stopped``. Docker then answers every removal with "removal already in progress"
or a read time-out, forever, and the container's shim, gofer and sandbox processes
stay on the host. Killing the processes that serve *that* container (found by its
64-hex id on their command line) lets Docker finish the removal.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

CONTAINER_ID = re.compile(r"\A[0-9a-f]{64}\Z")
RUNTIME_PROCESS_NAMES = (b"containerd-shim", b"runsc")
"""Only processes whose command line names one of these, and the container id, are killed."""


def runtime_processes(container_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the shim/runtime processes that serve ``container_id`` (full 64-hex id).

    Raises:
        ValueError: ``container_id`` is not a full container id (a prefix could match
            another container's processes).
    """
    if not CONTAINER_ID.match(container_id):
        raise ValueError("a full 64-hex container id is required")
    needle = container_id.encode()
    pids: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if needle in cmdline and any(name in cmdline for name in RUNTIME_PROCESS_NAMES):
            pids.append(int(entry.name))
    return sorted(pids)


def kill_runtime_processes(container_id: str) -> list[int]:
    """SIGKILL the shim and runtime processes of ``container_id``; the pids signalled."""
    killed: list[int] = []
    for pid in runtime_processes(container_id):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pid)
    return killed
