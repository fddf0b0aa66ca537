"""Live progress on a terminal (stderr) while ``run`` works: the lines of
``trace.progress``, and between them what the run is waiting for and for how long.

On a terminal the waiting line updates in place each second; anywhere else (a pipe, a
log file) it is a plain line every ``QUIET_SECONDS`` of silence instead. A failure to
write (the terminal went away) turns the display off; it never stops the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from sandbox_agent.trace.progress import ProgressLines

TICK_SECONDS = 1.0
QUIET_SECONDS = 30.0
"""Off a terminal: how long the run may be silent before a line says it still waits."""
CLEAR_LINE = "\r\x1b[2K"


class TerminalProgress:
    """The ``on_event`` sink of ``run_task`` that shows progress on ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        clock: Callable[[], float] = time.monotonic,
        tick_seconds: float = TICK_SECONDS,
        quiet_seconds: float = QUIET_SECONDS,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._live = _isatty(stream)
        self._every = tick_seconds if self._live else quiet_seconds
        self._lines = ProgressLines()
        self._lock = threading.Lock()
        self._since = clock()
        self._said = 0.0
        """Off a terminal: the last waiting line's elapsed seconds (no line twice a wait)."""
        self._drawn = False
        self._broken = False
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._ticker.start()

    def on_event(self, event: dict[str, Any]) -> None:
        """Show what ``event`` adds; never raises (it runs inside the trace's writer)."""
        try:
            lines = self._lines.lines(event)
        except Exception:  # a display bug must not end the run
            lines = []
        with self._lock:
            self._since = self._clock()
            self._said = 0.0
            self._write("".join(f"{line}\n" for line in lines))

    def close(self) -> None:
        """Stop updating and clear the waiting line."""
        self._stop.set()
        self._ticker.join()
        with self._lock:
            self._write("")

    def _tick(self) -> None:
        while not self._stop.wait(min(self._every, TICK_SECONDS)):
            with self._lock:
                waiting = self._lines.waiting()
                elapsed = self._clock() - self._since
                if waiting is None or elapsed < TICK_SECONDS:
                    continue  # nothing to wait for, or no wait worth a line yet
                if self._live:
                    self._write(f"  … {waiting}, {elapsed:.0f} s", live=True)
                elif elapsed - self._said >= self._every:
                    self._said = elapsed
                    self._write(f"  … {waiting}, {elapsed:.0f} s so far\n")

    def _write(self, text: str, *, live: bool = False) -> None:
        """Write ``text`` (the caller holds the lock), replacing the waiting line."""
        if self._broken:
            return
        clear = CLEAR_LINE if self._drawn else ""
        try:
            self._stream.write(clear + text)
            self._stream.flush()
        except (OSError, ValueError):
            self._broken = True
            return
        self._drawn = live


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False
