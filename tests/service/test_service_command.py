"""`sandbox-agent serve` itself: a token made and printed once, defaults under the state folder."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(home: Path) -> tuple[list[str], str]:
    """Start `serve`, wait for /health, list the runs with the printed or stored token, stop."""
    port = _free_port()
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [sys.executable, "-m", "sandbox_agent", "serve", "--port", str(port)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/health").raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.1)
        token = (home / "service" / "token").read_text().strip()
        runs = httpx.get(f"{url}/runs", headers={"Authorization": f"Bearer {token}"})
        assert runs.json() == {"runs": [], "total": 0}
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    return output.splitlines(), token


def test_serve_makes_its_token_once_and_prints_it_once(tmp_path: Path) -> None:
    first_lines, token = _serve(tmp_path)
    assert any(token in line for line in first_lines)
    token_file = tmp_path / "service" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert (tmp_path / "service" / "runs.sqlite3").exists()
    second_lines, same_token = _serve(tmp_path)
    assert same_token == token
    assert not any(token in line for line in second_lines), "printed only when made"
