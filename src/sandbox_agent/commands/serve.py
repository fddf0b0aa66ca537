"""`sandbox-agent serve`: the HTTP API and web page over agent runs (DESIGN.md section 6)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "serve the HTTP API and the web page (bearer token; loopback by default)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags; every default is a named constant of ``service.settings``."""
    from sandbox_agent.service import settings as defaults

    parser.add_argument("--host", default=defaults.DEFAULT_HOST, help="address to bind")
    parser.add_argument("--port", type=int, default=defaults.DEFAULT_PORT, help="port to bind")
    parser.add_argument(
        "--token-file",
        type=Path,
        help="bearer token file (made, mode 0600, at first start); "
        "required to bind a non-loopback address",
    )
    parser.add_argument("--db", type=Path, help="SQLite database of runs")
    parser.add_argument("--max-concurrent", type=int, help="runs at once (default: cores)")
    parser.add_argument(
        "--max-queue",
        type=int,
        default=defaults.DEFAULT_MAX_QUEUE,
        help="runs waiting beyond --max-concurrent before 429",
    )
    parser.add_argument("--fixtures-dir", type=Path, help="the folder of named fixtures")
    parser.add_argument(
        "--runtime", choices=("runc", "runsc"), default="runc", help="sandbox runtime"
    )
    parser.add_argument(
        "--provider",
        action="append",
        dest="providers",
        metavar="NAME",
        help="a provider clients may use (repeat); default: the simulated ones",
    )


def run(args: argparse.Namespace) -> int:
    """Check the flags, load or make the token, then serve until interrupted.

    Raises:
        UsageError: a bad flag, or a non-loopback address without ``--token-file``.
        SetupError: the token file is unusable.
    """
    import uvicorn
    from pydantic import ValidationError

    from sandbox_agent.errors import UsageError
    from sandbox_agent.service import ServiceSettings, create_app
    from sandbox_agent.service.auth import load_or_create_token
    from sandbox_agent.service.settings import is_loopback, service_home

    if not is_loopback(args.host) and args.token_file is None:
        raise UsageError(
            f"refusing to bind non-loopback address {args.host} without an explicit "
            "--token-file: give one (it is made, mode 0600, if missing)"
        )
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (1-65535)")
    token_path: Path = args.token_file or service_home() / "token"
    token = load_or_create_token(token_path)
    if token.created:
        print(f"sandbox-agent serve: new bearer token (kept in {token_path}): {token.token}")
    chosen = {
        "db_path": args.db,
        "fixtures_dir": args.fixtures_dir,
        "max_concurrent": args.max_concurrent,
        "max_queue": args.max_queue,
        "runtime": args.runtime,
        "providers": tuple(args.providers) if args.providers else None,
    }
    try:
        settings = ServiceSettings(
            token=token.token, **{key: value for key, value in chosen.items() if value is not None}
        )
    except ValidationError as error:
        problem = error.errors()[0]
        flag = "--" + str(problem["loc"][0]).replace("_", "-")
        raise UsageError(f"{flag}: {problem['msg']}") from None
    print(f"sandbox-agent serve: http://{args.host}:{args.port}/ (token in {token_path})")
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info")
    return 0
