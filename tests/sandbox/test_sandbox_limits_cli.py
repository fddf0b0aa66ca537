"""The shared limit flags: defaults, values, and a one-line error for a bad value."""

from __future__ import annotations

import argparse

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.sandbox.base import SandboxLimits
from sandbox_agent.sandbox.limits_cli import add_limit_arguments, limits_from_args


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_limit_arguments(parser)
    return parser.parse_args(argv)


def test_defaults_are_the_models() -> None:
    assert limits_from_args(parse()) == SandboxLimits()


def test_every_flag_sets_its_limit() -> None:
    limits = limits_from_args(
        parse(
            "--test-timeout", "5", "--output-budget", "100", "--memory-bytes", "33554432",
            "--cpus", "0.5", "--pids-limit", "32", "--nofile", "64", "--fsize-bytes", "2097152",
            "--tmpfs-bytes", "1048576",
        )
    )  # fmt: skip
    assert limits == SandboxLimits(
        timeout_s=5,
        output_budget_bytes=100,
        memory_bytes=32 * 1024 * 1024,
        cpus=0.5,
        pids=32,
        nofile=64,
        fsize_bytes=2 * 1024 * 1024,
        tmpfs_bytes=1024 * 1024,
    )


def test_an_out_of_range_value_names_the_flag() -> None:
    with pytest.raises(UsageError, match="--pids-limit"):
        limits_from_args(parse("--pids-limit", "1"))
