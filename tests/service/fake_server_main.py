"""Run the service with the deterministic run function in its own process (for kill -9 tests).

Usage: python fake_server_main.py DB FIXTURES_DIR WORK_DIR PORT_FILE SECONDS_PER_RUN
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import uvicorn

from sandbox_agent.service import ServiceSettings, create_app
from sandbox_agent.service.fake_run import FakeRunFunction
from sandbox_agent.service.models import PreflightStatus

TOKEN = "test-token-0123456789abcdef"


def main() -> None:
    db, fixtures, work, port_file, seconds = sys.argv[1:6]
    settings = ServiceSettings(
        token=TOKEN, db_path=Path(db), fixtures_dir=Path(fixtures), work_dir=Path(work),
        max_concurrent=2, rate_burst=100,
    )  # fmt: skip
    app = create_app(
        settings,
        FakeRunFunction(float(seconds)),
        preflight_fn=lambda: PreflightStatus(status="unknown"),
        reap_fn=list,
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    Path(port_file).write_text(str(sock.getsockname()[1]))
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
