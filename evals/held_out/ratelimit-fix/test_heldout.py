"""Held out: the default burst is one second's worth of tokens."""

import unittest

from ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class HeldOutRateLimiterTest(unittest.TestCase):
    def test_default_burst_equals_rate(self) -> None:
        limiter = RateLimiter(rate=3, clock=Clock())
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 3)

    def test_fractional_rate(self) -> None:
        limiter = RateLimiter(rate=2.5, clock=Clock())
        self.assertEqual(limiter.burst, 2.5)

    def test_explicit_burst_kept(self) -> None:
        limiter = RateLimiter(rate=10, burst=4, clock=Clock())
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 4)

    def test_refill_capped_at_burst(self) -> None:
        clock = Clock()
        limiter = RateLimiter(rate=2, clock=clock)
        clock.now += 100
        self.assertEqual(sum(limiter.allow() for _ in range(10)), 2)
