"""`sandbox-agent view [RUN_DIR | RESULTS_DIR] [--port N]`: the run viewer over a folder,
read-only, on loopback (docs/VIEWER.md)."""

from __future__ import annotations

import argparse
import errno
import socket
from pathlib import Path

HELP = "serve the run viewer read-only on loopback over a run or results folder"
LOOPBACK = "127.0.0.1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``view`` flags; every default is a named constant of ``viewer.settings``."""
    from sandbox_agent.viewer import settings as defaults

    parser.add_argument(
        "folder",
        metavar="RUN_DIR | RESULTS_DIR",
        nargs="?",
        type=Path,
        help="a run folder, an eval results folder, or a folder of them "
        "(default: the state folder's runs)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=defaults.DEFAULT_PORT,
        help=f"port on {LOOPBACK} (default {defaults.DEFAULT_PORT}; 0: any free port)",
    )
    parser.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="the signer's signing-key.pub for the seal check (default: this host's key)",
    )
    limits = parser.add_argument_group("limits")
    for flag, default, text in (
        ("--max-file-bytes", defaults.DEFAULT_MAX_FILE_BYTES, "largest file read"),
        ("--max-events", defaults.DEFAULT_MAX_EVENTS, "trace events shown per run"),
        ("--max-runs", defaults.DEFAULT_MAX_RUNS, "run folders listed"),
        ("--max-depth", defaults.DEFAULT_MAX_DEPTH, "folder levels scanned"),
        ("--max-scan-entries", defaults.DEFAULT_MAX_SCAN_ENTRIES, "folder entries scanned"),
    ):
        limits.add_argument(
            flag, type=int, default=default, metavar="N", help=f"{text} (default {default})"
        )


def run(args: argparse.Namespace) -> int:
    """Check the folder and flags, bind loopback, print the URL on one line, serve.

    Raises:
        UsageError: the folder does not exist or is not a readable folder, a flag is out
            of range, or the port is in use.
    """
    import uvicorn
    from pydantic import ValidationError

    from sandbox_agent.errors import UsageError
    from sandbox_agent.settings import state_home
    from sandbox_agent.viewer.app import create_view_app
    from sandbox_agent.viewer.settings import ViewSettings

    folder: Path = args.folder if args.folder is not None else state_home() / "runs"
    refused = folder_problem(folder, given=args.folder is not None)
    if refused is not None:
        raise UsageError(refused)
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (0-65535; 0: any free port)")
    try:
        settings = ViewSettings(
            root=folder,
            host=LOOPBACK,
            public_key=args.public_key,
            max_file_bytes=args.max_file_bytes,
            max_events=args.max_events,
            max_runs=args.max_runs,
            max_depth=args.max_depth,
            max_scan_entries=args.max_scan_entries,
        )
    except ValidationError as error:
        problem = error.errors()[0]
        flag = "--" + str(problem["loc"][0]).replace("_", "-")
        raise UsageError(f"{flag}: {problem['msg']}") from None
    app = create_view_app(settings)
    listener = _listen(args.port)
    try:
        url = start_url(folder, listener.getsockname()[1])
        print(f"sandbox-agent view: {url} ({folder}, read-only)", flush=True)
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        listener.close()
    return 0


def folder_problem(folder: Path, *, given: bool) -> str | None:
    """Why ``folder`` cannot be viewed, in one line (a missing path is not "not a folder"),
    or None. ``given``: named on the command line, not the default runs folder."""
    if not folder.exists():
        if not given:
            return (
                f"no runs here yet: {folder} does not exist; run 'sandbox-agent run' first, "
                "or give a run folder or a results folder"
            )
        return f"{folder} does not exist: give a run folder or a results folder"
    if not folder.is_dir():
        return f"{folder} is not a folder: give a run folder or a results folder"
    return None


def start_url(folder: Path, port: int) -> str:
    """The URL to open: the run itself for a run folder, the evaluation itself for a
    results folder, else the list of what the folder holds."""
    from sandbox_agent.viewer.folder import REPORT_FILE, RESULT_FILE, ROOT_KEY, TRACE_FILE

    page = f"http://{LOOPBACK}:{port}/"
    if (folder / REPORT_FILE).is_file():
        return f"{page}#/evals/{ROOT_KEY}"
    if (folder / TRACE_FILE).is_file() or (folder / RESULT_FILE).is_file():
        return f"{page}#/runs/{ROOT_KEY}"
    return page


def _listen(port: int) -> socket.socket:
    """A socket listening on loopback ``port``, bound before the URL is printed.

    Raises:
        UsageError: the port is in use or cannot be bound.
    """
    from sandbox_agent.errors import UsageError

    try:
        return socket.create_server((LOOPBACK, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise UsageError(
                f"{LOOPBACK}:{port} is in use: choose another --port, or --port 0 for any free one"
            ) from None
        raise UsageError(f"cannot listen on {LOOPBACK}:{port} ({error.strerror})") from None
