"""A free TCP port for a server we start and that binds it a moment later.

Asking the kernel for port 0 and closing the probe leaves a window: until the server
binds, the port is back in the kernel's ephemeral range, where any outgoing connection or
other port-0 bind on the machine may take it (the server then fails to start). A port
chosen *below* that range cannot be taken that way; only a program that binds that very
port could. So the choice is random among the ports between ``FIXED_PORT_FLOOR`` and the
ephemeral range, checked free; a machine whose ephemeral range leaves no such room falls
back to the kernel's choice.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
FIXED_PORT_FLOOR = 20_000
"""Above Ray's worker ports (10002-19999 by default), which Ray binds by number itself."""
MIN_ROOM = 1_000
"""Fewer candidate ports than this below the ephemeral range: use the kernel's choice."""
TRIES = 64
_CHOOSER = random.SystemRandom()
"""Not the module's ``random``: a seeded caller's sequence must not depend on our ports."""


def free_port(host: str, *, candidates: Sequence[int] | None = None) -> int:
    """A TCP port free on ``host`` now, outside the ephemeral range where possible."""
    pool = fixed_candidates() if candidates is None else candidates
    for port in _CHOOSER.sample(pool, k=min(TRIES, len(pool))):
        if bindable(host, port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        chosen: int = probe.getsockname()[1]
        return chosen


def fixed_candidates(range_file: Path = EPHEMERAL_RANGE_FILE) -> range:
    """The ports from ``FIXED_PORT_FLOOR`` up to the ephemeral range (empty when too few)."""
    try:
        low = int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    room = range(FIXED_PORT_FLOOR, min(low, 65_536))
    return room if len(room) >= MIN_ROOM else range(0)


def bindable(host: str, port: int) -> bool:
    """Whether nothing holds ``host:port`` now (a listener, a connection, TIME_WAIT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
