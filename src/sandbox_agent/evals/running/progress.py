"""A progress bar on stderr: redrawn in place on a terminal, a line per tenth otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30


class ProgressBar:
    """Counts finished runs; ``advance`` is called from one thread (the collector)."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "eval") -> None:
        self.total = max(total, 0)
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.done = 0
        self.passed = 0
        self._started = time.monotonic()
        self._interactive = self.stream.isatty()
        self._last_tenth = -1

    def advance(self, passed: bool) -> None:
        """One more run finished."""
        self.done += 1
        self.passed += passed
        tenth = self.done * 10 // self.total if self.total else 10
        if self._interactive:
            self.stream.write("\r" + self.render())
        elif tenth != self._last_tenth or self.done == self.total:
            self.stream.write(self.render() + "\n")
        self._last_tenth = tenth
        self.stream.flush()

    def render(self) -> str:
        filled = BAR_WIDTH * self.done // self.total if self.total else BAR_WIDTH
        elapsed = time.monotonic() - self._started
        remaining = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        return (
            f"{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
            f"{self.done}/{self.total} passed {self.passed} "
            f"elapsed {elapsed:.0f}s eta {remaining:.0f}s"
        )

    def close(self) -> None:
        """End the line on a terminal."""
        if self._interactive:
            self.stream.write("\n")
            self.stream.flush()
