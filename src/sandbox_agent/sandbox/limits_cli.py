"""The sandbox limit flags, shared by every command that runs sandboxes (``run``, ``stress``).

``--test-timeout`` and ``--output-budget`` are contract names (docs/CONTRACT.md section 3).
"""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from sandbox_agent.errors import UsageError
from sandbox_agent.sandbox.base import (
    DEFAULT_CPUS,
    DEFAULT_FSIZE_BYTES,
    DEFAULT_MEMORY_BYTES,
    DEFAULT_NOFILE,
    DEFAULT_OUTPUT_BUDGET_BYTES,
    DEFAULT_PIDS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TMPFS_BYTES,
    SandboxLimits,
)

# flag, attribute, type, default, help
_FLAGS: tuple[tuple[str, str, type, float | int, str], ...] = (
    ("--test-timeout", "timeout_s", float, DEFAULT_TIMEOUT_S, "seconds per test run"),
    ("--output-budget", "output_budget_bytes", int, DEFAULT_OUTPUT_BUDGET_BYTES, "output bytes"),
    ("--memory-bytes", "memory_bytes", int, DEFAULT_MEMORY_BYTES, "memory (= memory+swap)"),
    ("--cpus", "cpus", float, DEFAULT_CPUS, "CPU cores"),
    ("--pids-limit", "pids", int, DEFAULT_PIDS, "processes and threads"),
    ("--nofile", "nofile", int, DEFAULT_NOFILE, "open files (RLIMIT_NOFILE)"),
    ("--fsize-bytes", "fsize_bytes", int, DEFAULT_FSIZE_BYTES, "largest file (RLIMIT_FSIZE)"),
    ("--tmpfs-bytes", "tmpfs_bytes", int, DEFAULT_TMPFS_BYTES, "size of the /tmp tmpfs"),
)
_DEST_PREFIX = "sandbox_limit_"


def _shown(default: float) -> str:
    """``536870912`` as ``536870912 = 512 MiB``; other numbers as they are."""
    if isinstance(default, int) and default >= 1024 * 1024 and default % (1024 * 1024) == 0:
        return f"{default} = {default // (1024 * 1024)} MiB"
    return f"{default:g}"


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the sandbox limit flags, each defaulting to ``SandboxLimits``'s default."""
    group = parser.add_argument_group("sandbox limits")
    for flag, attribute, kind, default, text in _FLAGS:
        group.add_argument(
            flag,
            dest=_DEST_PREFIX + attribute,
            type=kind,
            default=default,
            metavar="N",
            help=f"{text} (default {_shown(default)})",
        )


def limits_from_args(args: argparse.Namespace) -> SandboxLimits:
    """The limits the flags ask for.

    Raises:
        UsageError: a value is out of range (the message names the flag and the bounds).
    """
    values = {attribute: getattr(args, _DEST_PREFIX + attribute) for _, attribute, *_ in _FLAGS}
    try:
        return SandboxLimits(**values)
    except ValidationError as error:
        problem = error.errors()[0]
        attribute = str(problem["loc"][0]) if problem["loc"] else ""
        flag = next((f for f, a, *_ in _FLAGS if a == attribute), attribute)
        raise UsageError(f"{flag}: {problem['msg']} (see --help)") from error
