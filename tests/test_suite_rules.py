"""The suite's own rules (tests/README.md, "What a test may assume"), checked."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_property_tests_have_no_time_limit() -> None:
    # tests/conftest.py's profile: a property test fails on what it computes, never on
    # how long a loaded machine took to compute it.
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
