"""The ``sandbox-agent`` command line (docs/CLI.md).

Subcommands are chosen from one explicit table (name -> module). Each module in
``sandbox_agent.commands`` exposes ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int`` and imports its heavy dependencies inside ``run``, so that
start-up stays fast. Exit codes: 0 success, 1 a finished run that did not
succeed, 2 a usage or setup error (one line saying what to do), 130 interrupted,
141 when whoever read the output went away (``| head``), as for a shell's SIGPIPE.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from sandbox_agent.errors import SetupError, UsageError

DESCRIPTION = (
    "A coding agent whose tool use, test execution and spend are contained and verified "
    "by a trusted controller. Exit codes: 0 success, 1 a finished run that did not "
    "succeed, 2 a usage or set-up error, 130 interrupted. Commands and flags: docs/CLI.md."
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141

COMMANDS: dict[str, str] = {
    "run": "sandbox_agent.commands.run",
    "fixtures": "sandbox_agent.commands.fixtures",
    "preflight": "sandbox_agent.commands.preflight",
    "reap": "sandbox_agent.commands.reap",
    "eval": "sandbox_agent.commands.eval",
    "serve": "sandbox_agent.commands.serve",
    "stress": "sandbox_agent.commands.stress",
    "verify": "sandbox_agent.commands.verify",
    "ledger": "sandbox_agent.commands.ledger",
    "model": "sandbox_agent.commands.model",
    "cluster": "sandbox_agent.commands.cluster",
    "view": "sandbox_agent.commands.view",
    "deps": "sandbox_agent.commands.deps",
}


SANDBOX_COMMANDS = frozenset({"run", "eval", "serve", "stress", "preflight"})
"""Commands that start sandboxes, and so need the runner image recorded in this state
folder: before them, a new state folder adopts the image Docker already holds under the
inputs' tag (``hostsetup.runner``), instead of each saying "not built"."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser, with every subcommand of the table.

    Args:
        only: add the arguments of this subcommand alone (the others keep their help
            line), so one command's start-up does not pay for another's imports; ``""``
            adds none (the top-level help and an unknown command need only the table).
    """
    parser = _Parser(prog="sandbox-agent", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        module = _load(name)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        if only is None or name == only:
            module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in COMMANDS else "")
    args = parser.parse_args(words)
    try:
        if args.command in SANDBOX_COMMANDS:
            _adopt_runner_image()
        code: int = args._run(args)
    except (UsageError, SetupError) as error:
        print(f"sandbox-agent {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"sandbox-agent {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _output_closed()
    return code


def _adopt_runner_image() -> None:
    """Record the runner image Docker holds under the inputs' tag when this state folder
    has no record for them (a fresh ``SANDBOX_AGENT_HOME``); about 2 ms when it has one.
    Anything missing is left for the command to report (Docker, or "run 'make image'")."""
    from sandbox_agent.hostsetup.runner import runner_record

    with contextlib.suppress(SetupError):
        runner_record()


def _output_closed() -> int:
    """The reader of our standard output went away (``verify --json | head``): nothing
    more can be said there, so say nothing, and let no later flush raise again."""
    with open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def console() -> int:
    """The ``sandbox-agent`` console script (and ``python -m sandbox_agent``): ``main``, then
    an exit without the interpreter's last full garbage collection.

    By then every file the command wrote is closed and its output flushed; what is left
    is pydantic's and the Docker SDK's object graphs, and collecting them only delays
    the exit (~0.1 s of a ~1 s demo). ``gc.freeze`` moves them out of the collector's
    reach; finalisation still runs (atexit handlers, the standard streams' flush).
    """
    code = main()
    try:
        sys.stdout.flush()  # here, where a reader gone away is an exit code, not a traceback
    except BrokenPipeError:
        code = _output_closed()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(console())
