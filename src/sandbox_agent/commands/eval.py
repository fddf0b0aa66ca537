"""`sandbox-agent eval`: not built yet (see the issue that adds it)."""

from __future__ import annotations

import argparse

HELP = "eval (not built yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments yet."""


def run(args: argparse.Namespace) -> int:
    """Not built yet: exit 2 with a line saying so."""
    from sandbox_agent.errors import UsageError

    raise UsageError("'eval' is not built yet in this version")
