"""Host CPU load for a stress run: K busy-loop processes, stopped on exit."""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType

BUSY_LOOP = "while True: pass"


class CpuLoad:
    """Runs ``processes`` busy loops while the context is open."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._children: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuLoad:
        for _ in range(self.processes):
            self._children.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP]))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for child in self._children:
            child.kill()
        for child in self._children:
            child.wait()
        self._children.clear()
