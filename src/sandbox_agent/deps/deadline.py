"""The dependency phase's clock: ``--deps-timeout`` and the run's own wall clock, whichever
ends first (SR-12 D3). Every step that can wait (uv, a download) is given what is left."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sandbox_agent.errors import DependencyError

TIMEOUT_HINT = "raise --deps-timeout S, or the run's --max-wall-seconds"


@dataclass(frozen=True)
class Deadline:
    """A point on ``time.monotonic()``'s clock."""

    at: float = math.inf

    @classmethod
    def within(cls, seconds: float, *, also: float | None = None) -> Deadline:
        """``seconds`` from now, or ``also`` (a monotonic deadline) when that is sooner."""
        at = time.monotonic() + seconds
        return cls(at if also is None else min(at, also))

    def left(self, step_s: float) -> float:
        """What a step may take: its own limit, or what is left of the phase.

        Raises:
            DependencyError: ``timeout``: nothing is left.
        """
        remaining = self.at - time.monotonic()
        if remaining <= 0:
            raise DependencyError(
                "timeout", f"the dependency environment ran out of time ({TIMEOUT_HINT})"
            )
        return min(step_s, remaining)
