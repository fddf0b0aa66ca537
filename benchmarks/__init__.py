"""Benchmarks, run by ``make bench`` and never by the tests."""
