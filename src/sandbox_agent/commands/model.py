"""`sandbox-agent model start|stop|status [--json]`: the local model server (docs/CLI.md).

``start`` (re)starts it with the given settings; ``stop`` stops it; ``status`` says
whether it runs and where. ``run --provider local`` starts it when it is not running
and leaves it running for the next run. Exit 0 on success (``status``: only when it
runs), 1 when ``status`` finds none, 2 for a usage or set-up error.
"""

from __future__ import annotations

import argparse

HELP = "start, stop or show the local model server (make model fetches it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``action`` and the start settings, each with its named default."""
    from sandbox_agent.localmodel.server import (
        DEFAULT_CONTEXT_TOKENS,
        DEFAULT_START_TIMEOUT_SECONDS,
    )

    parser.add_argument(
        "action",
        choices=("start", "stop", "status"),
        help="start the local model server, stop it, or say whether it runs",
    )
    parser.add_argument("--json", action="store_true", help="print the status as JSON")
    parser.add_argument(
        "--context-tokens",
        "-c",
        type=int,
        default=DEFAULT_CONTEXT_TOKENS,
        metavar="N",
        help=f"start: the context window in tokens (default {DEFAULT_CONTEXT_TOKENS})",
    )
    parser.add_argument(
        "--threads", type=int, metavar="N", help="start: CPU threads (default: all cores)"
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="start: loopback port (default: any)"
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"start: seconds to wait for it (default {DEFAULT_START_TIMEOUT_SECONDS:g})",
    )


def run(args: argparse.Namespace) -> int:
    """Carry out the action and print the status.

    Raises:
        UsageError: a setting out of range.
        SetupError: nothing built or fetched yet, a busy port, or a failed start.
    """
    from pydantic import ValidationError

    from sandbox_agent.errors import UsageError
    from sandbox_agent.localmodel import server

    if args.action == "start":
        given = {
            "context_tokens": args.context_tokens,
            "threads": args.threads,
            "port": args.port,
            "start_timeout_seconds": args.start_timeout,
        }
        try:
            settings = server.ServerSettings(**{k: v for k, v in given.items() if v is not None})
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            name = str(problem["loc"][0]).replace("_seconds", "").replace("_", "-")
            raise UsageError(f"--{name}: {problem['msg']}") from None
        server.start(settings)
    elif args.action == "stop":
        was_running = server.stop()
        if not args.json:
            print("stopped" if was_running else "no model server was running")
            return 0
    now = server.status()
    if args.json:
        print(now.model_dump_json(indent=2))
    elif args.action != "stop":
        where = f"{now.base_url} (pid {now.pid}, context {now.context_tokens})"
        print(
            f"{'running' if now.running else 'not running'}: {now.model}"
            + (f" at {where}" if now.running else "")
        )
    return 0 if now.running or args.action == "stop" else 1
