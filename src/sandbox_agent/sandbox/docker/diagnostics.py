"""Small helpers that keep diagnostics bounded and phase timings uniform."""

from __future__ import annotations

import time
from typing import Any

MAX_DETAIL = 500
"""Diagnostics.detail holds at most this many characters."""


def bounded(text: str, limit: int = MAX_DETAIL) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def elapsed_ms(since: float) -> float:
    """Milliseconds since the ``time.monotonic()`` instant ``since``, rounded to 0.01."""
    return round((time.monotonic() - since) * 1000, 2)


def docker_state(inspect: dict[str, Any]) -> tuple[str | None, int | None, bool | None]:
    """``(Status, ExitCode, OOMKilled)`` from an inspect result (None where absent)."""
    state = inspect.get("State") or {}
    status = state.get("Status")
    code = state.get("ExitCode")
    oom = state.get("OOMKilled")
    return (
        str(status) if status is not None else None,
        int(code) if isinstance(code, int) else None,
        bool(oom) if oom is not None else None,
    )
