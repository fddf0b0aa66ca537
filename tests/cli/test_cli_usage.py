"""The command line's own rules: one table of commands, usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

from sandbox_agent.cli import COMMANDS, build_parser


def test_every_contract_command_is_in_the_table() -> None:
    contract = {"run", "fixtures", "preflight", "eval", "serve", "stress", "verify", "reap"}
    assert contract <= set(COMMANDS)


def test_parser_builds_with_every_command() -> None:
    parser = build_parser()
    assert parser.prog == "sandbox-agent"


def test_unknown_command_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--help" in done.stderr
