"""A token bucket per client, for submissions."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

MAX_TRACKED_CLIENTS = 10_000
"""Past this many clients the least recently seen is forgotten (its bucket starts full again)."""


class RateLimiter:
    """``burst`` submissions at once per client, refilled at ``rate_per_second``."""

    def __init__(self, rate_per_second: float, burst: int) -> None:
        self._rate = rate_per_second
        self._burst = float(burst)
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def acquire(self, client: str, now: float | None = None) -> float:
        """Take one token for ``client``.

        Returns:
            0.0 when allowed; otherwise the seconds to wait before the next token (Retry-After).
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(client, (self._burst, now))
            tokens = min(self._burst, tokens + (now - last) * self._rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self._rate
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > MAX_TRACKED_CLIENTS:
                self._buckets.popitem(last=False)
        return wait


def retry_after_header(seconds: float) -> str:
    """Whole seconds, at least 1 (``Retry-After`` takes an integer)."""
    return str(max(1, math.ceil(seconds)))
