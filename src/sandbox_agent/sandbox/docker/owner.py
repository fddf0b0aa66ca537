"""Who owns a sandbox: the controller process, named so a reaper can tell if it is dead.

The owner label is ``<host>:<pid>:<start time>``; the start time (clock ticks since boot,
from ``/proc/<pid>/stat``) tells a live controller from a new process that reuses its pid.
A container owned from another host is never reaped from here.
"""

from __future__ import annotations

import functools
import os
import socket

from sandbox_agent.procstat import process_start_time

LABEL_SANDBOX = "sandbox-agent.sandbox"
"""Present (value ``1``) on every sandbox container: lists them all."""
LABEL_OWNER = "sandbox-agent.owner"
"""``<host>:<pid>:<start time>`` of the controller process that created the container."""


@functools.cache
def _this_owner(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:{process_start_time(pid) or '0'}"


def owner_value() -> str:
    """This process's owner label value."""
    return _this_owner(os.getpid())


def owner_is_dead(value: str) -> bool:
    """True only when ``value`` names a process on this host that no longer runs.

    A malformed value or another host's process counts as alive: never reap what we
    cannot prove abandoned.
    """
    host, _, rest = value.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit() or not start:
        return False
    return process_start_time(int(pid_text)) != start
