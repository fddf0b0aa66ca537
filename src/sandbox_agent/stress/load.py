"""Host CPU load for a stress run: K busy-loop processes, stopped on exit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_LOOP = "while True: pass"


@contextmanager
def busy_loops(processes: int) -> Iterator[None]:
    """Runs ``processes`` busy loops while the context is open; every one started is
    killed and waited for when it closes (also when a later one failed to start)."""
    children: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(processes):
            children.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP]))
        yield
    finally:
        for child in children:
            child.kill()
        for child in children:
            child.wait()
