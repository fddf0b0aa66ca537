"""Run the service with the deterministic run function in its own process (for kill -9 and
signal tests), served the way ``sandbox-agent serve`` serves it.

Usage: python fake_server_main.py DB FIXTURES_DIR WORK_DIR PORT_FILE SECONDS_PER_RUN
       [--max-concurrent N] [--log-level LEVEL] [--stubborn] [SETTING=VALUE ...]

``--stubborn`` runs ignore their cancel token; ``SETTING=VALUE`` sets a float field of
``ServiceSettings`` (``stop_timeout_s=2``).
"""

from __future__ import annotations

import argparse
import socket
import time
from pathlib import Path
from typing import Any

from fake_run import FakeRunFunction

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service import ServiceSettings, create_app
from sandbox_agent.service.models import PreflightStatus
from sandbox_agent.service.server import build_server

TOKEN = "test-token-0123456789abcdef"


class StubbornRun(FakeRunFunction):
    """A run that never looks at its cancel token."""

    def __call__(
        self, config: RunConfig, *, cancel: CancelToken | None = None, **_: Any
    ) -> RunResult:
        time.sleep(self.seconds)
        return super().__call__(config)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("db", "fixtures", "work", "port_file", "seconds"):
        parser.add_argument(name)
    parser.add_argument("--max-concurrent", type=int, default=2)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("settings", nargs="*", metavar="SETTING=VALUE")
    args = parser.parse_intermixed_args()
    extra = {key: float(value) for key, value in (item.split("=", 1) for item in args.settings)}
    settings = ServiceSettings(
        token=TOKEN, db_path=Path(args.db), fixtures_dir=Path(args.fixtures),
        work_dir=Path(args.work), max_concurrent=args.max_concurrent, rate_burst=100, **extra,
    )  # fmt: skip
    run_fn = (StubbornRun if args.stubborn else FakeRunFunction)(float(args.seconds))
    app = create_app(
        settings,
        run_fn,
        preflight_fn=lambda: PreflightStatus(status="unknown"),
        reap_fn=list,
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    Path(args.port_file).write_text(str(sock.getsockname()[1]))
    build_server(app, settings, log_level=args.log_level).run(sockets=[sock])


if __name__ == "__main__":
    main()
