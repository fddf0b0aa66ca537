"""`sandbox-agent reap`: remove the containers and workspaces that crashed runs left behind."""

from __future__ import annotations

import argparse

HELP = "remove sandbox containers and workspaces whose controller process is gone"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    """Reap; print each thing removed (or not removed), and a count. Exit 1 if any failed."""
    from sandbox_agent.workspace.reap import reap_all

    removed, failures = reap_all()
    for line in removed:
        print(f"removed {line}")
    for line in failures:
        print(f"NOT removed {line}")
    print(f"reap: {len(removed)} removed, {len(failures)} failed")
    return 1 if failures else 0
