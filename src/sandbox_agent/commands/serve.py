"""`sandbox-agent serve`: the HTTP API and web page over agent runs (docs/CONTRACT.md section 8)."""

from __future__ import annotations

import argparse
import errno
import socket
from pathlib import Path

HELP = "serve the HTTP API and the web page (bearer token; loopback by default)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags; every default is a named constant of ``service.settings``."""
    from sandbox_agent.service import settings as defaults

    parser.add_argument(
        "--host", default=defaults.DEFAULT_HOST, help="address to bind (default %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=defaults.DEFAULT_PORT,
        help="port to bind (0: any free port, printed; default %(default)s)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="bearer token file (made, mode 0600, at first start); "
        "required to bind a non-loopback address (default: $STATE/service/token)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        help="SQLite database of runs (default: $STATE/service/runs.sqlite3)",
    )
    parser.add_argument(
        "--max-concurrent", type=int, metavar="N", help="runs at once (default: cores)"
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=defaults.DEFAULT_MAX_QUEUE,
        metavar="N",
        help="runs waiting beyond --max-concurrent before 429 (default %(default)s)",
    )
    parser.add_argument(
        "--head-timeout",
        type=float,
        default=defaults.DEFAULT_HEAD_TIMEOUT_S,
        metavar="SECONDS",
        help="close a connection that has not sent a whole request head by then "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=defaults.DEFAULT_BODY_TIMEOUT_S,
        metavar="SECONDS",
        help="close a connection whose request body has not all arrived this long after its "
        "head (default %(default)s)",
    )
    parser.add_argument(
        "--send-timeout",
        type=float,
        default=defaults.DEFAULT_SEND_TIMEOUT_S,
        metavar="SECONDS",
        help="cut a connection that has taken none of its answer for this long "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=defaults.DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="connections open at once; one more is answered 503 and closed (default %(default)s)",
    )
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=defaults.DEFAULT_STOP_TIMEOUT_S,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT: runs are cancelled at once; the process ends within this "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        dest="trusted_proxies",
        metavar="ADDRESS",
        help="believe X-Forwarded-For from this address (repeat); default: from none",
    )
    parser.add_argument(
        "--fixtures-dir",
        type=Path,
        metavar="DIR",
        help="the folder of named fixtures (default: the project's fixtures/)",
    )
    parser.add_argument(
        "--repo-root",
        action="append",
        dest="repo_roots",
        type=Path,
        metavar="DIR",
        help="let a run request name a folder under DIR by path (repo: PATH; repeat for "
        "more roots); DIR must be its own real path and hold none of the service's state; "
        "default: none, fixtures only",
    )
    parser.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="sandbox runtime (default %(default)s)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the queued runs on a Ray cluster (auto or HOST:PORT); --max-concurrent "
        "defaults to the cluster's sandbox slots (default: none, runs in this process)",
    )
    real = ", ".join(defaults.REAL_PROVIDERS)
    parser.add_argument(
        "--provider",
        action="append",
        dest="providers",
        metavar="NAME",
        help=f"a provider clients may use (repeat; the first real one is the default of a "
        f"request and of the page); real: {real}; default: the simulated "
        f"{', '.join(defaults.DEFAULT_PROVIDERS)}",
    )
    _add_maxima(parser)
    from sandbox_agent.commands.realmodel import add_real_model_arguments

    add_real_model_arguments(parser)


def _model_options(args: argparse.Namespace) -> dict[str, str | float | int]:
    """The real-model flags given, by options field, each checked for every real provider
    the server offers (one line naming the flag, at start, not at a run).

    Raises:
        UsageError: a value out of range for a provider the server offers.
    """
    from sandbox_agent.commands.realmodel import FLAG_OF_FIELD, provider_options_from
    from sandbox_agent.service import settings as defaults

    for provider in args.providers or ():
        if provider in defaults.REAL_PROVIDERS:
            provider_options_from(argparse.Namespace(**{**vars(args), "provider": provider}),
                                  plan_path=None)  # fmt: skip
    fields = {
        field: getattr(args, flag.removeprefix("--").replace("-", "_"), None)
        for field, flag in FLAG_OF_FIELD.items()
        if field != "plan_path"
    }
    return {field: value for field, value in fields.items() if value is not None}


def _add_maxima(parser: argparse.ArgumentParser) -> None:
    """The most one run request may ask for; a request over one is refused naming it."""
    from sandbox_agent.service import settings as defaults

    group = parser.add_argument_group(
        "run maxima (a request's budgets and repair options; absent ones get the run's "
        "defaults, capped by these)"
    )
    maxima: list[tuple[str, type, object, str, str]] = [
        ("--max-run-iterations", int, defaults.DEFAULT_MAX_RUN_ITERATIONS, "N", "model turns"),
        ("--max-run-tool-calls", int, defaults.DEFAULT_MAX_RUN_TOOL_CALLS, "N", "tool calls"),
        (
            "--max-run-wall-seconds",
            float,
            defaults.DEFAULT_MAX_RUN_WALL_SECONDS,
            "SECONDS",
            "wall clock of one run",
        ),
        ("--max-run-denials", int, defaults.DEFAULT_MAX_RUN_DENIALS, "N", "policy denials"),
        (
            "--max-run-invalid-outputs",
            int,
            defaults.DEFAULT_MAX_RUN_INVALID_OUTPUTS,
            "N",
            "invalid model outputs",
        ),
        (
            "--max-run-candidates",
            int,
            defaults.DEFAULT_MAX_RUN_CANDIDATES,
            "N",
            "repair: first-round candidates",
        ),
        ("--max-run-rounds", int, defaults.DEFAULT_MAX_RUN_ROUNDS, "R", "repair: rounds"),
        (
            "--max-run-round-candidates",
            int,
            defaults.DEFAULT_MAX_RUN_ROUND_CANDIDATES,
            "M",
            "repair: candidates per later round",
        ),
        (
            "--max-run-candidate-tokens",
            int,
            defaults.DEFAULT_MAX_RUN_CANDIDATE_TOKENS,
            "K",
            "repair: reply cap of one candidate",
        ),
    ]
    for flag, kind, default, metavar, what in maxima:
        group.add_argument(
            flag,
            type=kind,
            default=default,
            metavar=metavar,
            help=f"the most a request may ask for: {what} (default %(default)s)",
        )


PRIVATE_UMASK = 0o077
"""Everything the server makes (database, plans, traces, run records) is its owner's only."""

_FLAGS = {
    "head_timeout_s": "--head-timeout",
    "body_timeout_s": "--body-timeout",
    "send_timeout_s": "--send-timeout",
    "stop_timeout_s": "--stop-timeout",
    "trusted_proxies": "--trusted-proxy",
    "providers": "--provider",
    "repo_roots": "--repo-root",
}


def run(args: argparse.Namespace) -> int:
    """Check the flags, bind, load or make the token, then serve until interrupted.

    The URL is printed (with the port chosen for ``--port 0``) once the socket listens,
    so whoever reads it can connect at once. Once the flags are checked, the process umask
    becomes 077, so that nothing the server or its runs make is readable by other users.

    Raises:
        UsageError: a bad flag, or a non-loopback address without ``--token-file``.
        SetupError: the token file is unusable, or another server uses the database.
    """
    from sandbox_agent.errors import UsageError
    from sandbox_agent.httpguard import is_loopback_name

    if not is_loopback_name(args.host) and args.token_file is None:
        raise UsageError(
            f"refusing to bind non-loopback address {args.host} without an explicit "
            "--token-file: give one (it is made, mode 0600, if missing)"
        )
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (0-65535; 0: any free port)")
    listener = _listen(args.host, args.port)
    try:
        return _serve(args, listener)
    finally:
        listener.close()


def _serve(args: argparse.Namespace, listener: socket.socket) -> int:
    """Load or make the token, then serve on ``listener`` until interrupted."""
    import os
    import sqlite3

    from pydantic import ValidationError

    from sandbox_agent.errors import SetupError, UsageError
    from sandbox_agent.service import ServiceSettings, create_app
    from sandbox_agent.service.auth import load_or_create_token
    from sandbox_agent.service.repos import check_root
    from sandbox_agent.service.server import build_server
    from sandbox_agent.service.settings import MAXIMUM_FLAGS, service_home
    from sandbox_agent.service.store import RunStore

    token_path: Path = args.token_file or service_home() / "token"
    token = load_or_create_token(token_path)
    if token.created:
        print(f"sandbox-agent serve: new bearer token (kept in {token_path}): {token.token}")
    chosen = {
        "host": args.host,
        "db_path": args.db,
        "fixtures_dir": args.fixtures_dir,
        "max_concurrent": args.max_concurrent,
        "max_queue": args.max_queue,
        "head_timeout_s": args.head_timeout,
        "body_timeout_s": args.body_timeout,
        "send_timeout_s": args.send_timeout,
        "max_connections": args.max_connections,
        "stop_timeout_s": args.stop_timeout,
        "trusted_proxies": tuple(args.trusted_proxies) if args.trusted_proxies else None,
        "runtime": args.runtime,
        "providers": tuple(args.providers) if args.providers else None,
        "model_options": _model_options(args),
        "repo_roots": tuple(args.repo_roots) if args.repo_roots else None,
        **{field: getattr(args, field) for field in MAXIMUM_FLAGS},
    }
    try:
        settings = ServiceSettings(
            token=token.token, **{key: value for key, value in chosen.items() if value is not None}
        )
        for root in settings.repo_roots:  # the token may be kept outside the state folder
            check_root(root, (), (token_path,))
    except ValidationError as error:
        problem = error.errors()[0]
        field = str(problem["loc"][0]) if problem["loc"] else "repo_roots"
        flag = _FLAGS.get(field, "--" + field.replace("_", "-"))
        raise UsageError(f"{flag}: {_message(problem['msg'])}") from None
    except ValueError as error:
        raise UsageError(f"--repo-root: {error}") from None
    os.umask(PRIVATE_UMASK)
    # One server per database: refuse here, in one line, before the URL is printed. The
    # app's own store takes the lock again for the server's lifetime.
    try:
        RunStore(settings.db_path, busy_timeout_s=settings.db_busy_timeout_s).close()
    except sqlite3.Error as error:
        raise SetupError(
            f"cannot open the database {settings.db_path} ({error}): give another --db"
        ) from None
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if args.ray:
        if args.ray.startswith("ray://"):
            raise UsageError(
                "serve --ray needs the head's HOST:PORT (or auto): live progress needs "
                "streaming tasks, which Ray Client (ray://) does not carry"
            )
        from sandbox_agent.cluster.connect import connected
        from sandbox_agent.service.cluster import ClusterRunFunction

        with connected(args.ray) as target:
            run_fn = ClusterRunFunction(settings.runtime)
            if args.max_concurrent is None:
                settings = settings.model_copy(update={"max_concurrent": run_fn.slots()})
            print(
                f"sandbox-agent serve: runs go to the Ray cluster at {target.address} "
                f"({len(run_fn.usable())} nodes, {run_fn.slots()} sandbox slots)",
                flush=True,
            )
            print(
                f"sandbox-agent serve: http://{shown}:{port}/ (token in {token_path})", flush=True
            )
            app = create_app(settings, run_fn)
            build_server(app, settings, log_level="info").run(sockets=[listener])
        return 0
    print(f"sandbox-agent serve: http://{shown}:{port}/ (token in {token_path})", flush=True)
    build_server(create_app(settings), settings, log_level="info").run(sockets=[listener])
    return 0


def _message(text: str) -> str:
    """Pydantic's message without its ``Value error, `` prefix."""
    return text.removeprefix("Value error, ")


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, bound before anything is made or printed.

    Raises:
        UsageError: the address does not resolve, is in use, or cannot be bound here.
    """
    from sandbox_agent.errors import UsageError

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        return socket.create_server((host, port), family=family[0][0])
    except socket.gaierror as error:
        raise UsageError(
            f"--host {host} does not resolve ({error.strerror}): give an address"
        ) from None
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise UsageError(
                f"{host}:{port} is in use: choose another --port, or --port 0 for any free one"
            ) from None
        raise UsageError(
            f"cannot listen on {host}:{port} ({error.strerror}): give another --host or --port"
        ) from None
