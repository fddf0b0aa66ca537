"""`sandbox-agent serve` itself: a token made and printed once, defaults under the state folder."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx

URL_LINE = re.compile(r"^sandbox-agent serve: (http://127\.0\.0\.1:(\d+))/ ")


def _serve(home: Path) -> tuple[list[str], str]:
    """Start `serve --port 0`, read the URL it prints, list the runs with the stored token,
    stop. The URL is printed once the socket is bound: it answers at once, no polling."""
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while (match := URL_LINE.match(line := process.stdout.readline())) is None:
            assert line, f"serve ended without printing its URL: {lines}"
            lines.append(line.rstrip("\n"))
        lines.append(line.rstrip("\n"))
        url, port = match.group(1), int(match.group(2))
        assert port != 0
        httpx.get(f"{url}/health", timeout=30).raise_for_status()
        token = (home / "service" / "token").read_text().strip()
        runs = httpx.get(f"{url}/runs", headers={"Authorization": f"Bearer {token}"})
        assert runs.json() == {"runs": [], "total": 0}
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    return lines + output.splitlines(), token


def test_serve_makes_its_token_once_and_prints_it_once(tmp_path: Path) -> None:
    first_lines, token = _serve(tmp_path)
    assert any(token in line for line in first_lines)
    token_file = tmp_path / "service" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert (tmp_path / "service" / "runs.sqlite3").exists()
    second_lines, same_token = _serve(tmp_path)
    assert same_token == token
    assert not any(token in line for line in second_lines), "printed only when made"


def test_a_port_in_use_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-m", "sandbox_agent", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"127.0.0.1:{port} is in use" in done.stderr
    assert "--port 0" in done.stderr


def test_a_port_out_of_range_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "65536"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "0-65535" in done.stderr


def test_a_head_timeout_out_of_range_names_its_flag(tmp_path: Path) -> None:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0", "--head-timeout", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("sandbox-agent serve: --head-timeout:"), done.stderr
