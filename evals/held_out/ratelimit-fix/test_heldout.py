"""Held out: the default burst is one second's worth of tokens.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back. The limiter's clock must be a callable
in the candidate's process, so it is built there from the standard library: a deque
holding the time, read by ``functools.partial(operator.getitem, deque, 0)``."""

import unittest

from sandbox_supervisor.remote import candidate

ratelimit = candidate.module("ratelimit")


def remote_clock(start: float = 0.0):  # type: ignore[no-untyped-def]
    """A clock in the candidate's process, and the deque whose first item is its time."""
    time = candidate.module("collections").deque([start])
    read = candidate.module("functools").partial(candidate.module("operator").getitem, time, 0)
    return read, time


class HeldOutRateLimiterTest(unittest.TestCase):
    def test_default_burst_equals_rate(self) -> None:
        clock, _ = remote_clock()
        limiter = ratelimit.RateLimiter(rate=3, clock=clock)
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 3)

    def test_fractional_rate(self) -> None:
        clock, _ = remote_clock()
        limiter = ratelimit.RateLimiter(rate=2.5, clock=clock)
        self.assertEqual(limiter.burst, 2.5)

    def test_explicit_burst_kept(self) -> None:
        clock, _ = remote_clock()
        limiter = ratelimit.RateLimiter(rate=10, burst=4, clock=clock)
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 4)

    def test_refill_capped_at_burst(self) -> None:
        clock, time = remote_clock()
        limiter = ratelimit.RateLimiter(rate=2, clock=clock)
        time.appendleft(100.0)  # the clock now reads 100 s later
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 2)
