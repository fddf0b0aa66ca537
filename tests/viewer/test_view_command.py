"""`sandbox-agent view [RUN_DIR | RESULTS_DIR] [--port N]`: the URL on one line, loopback
only, read-only; every bad input one line and exit 2."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from viewer_harness import copy_real_model_run

from sandbox_agent.commands import view

URL_LINE = re.compile(r"^sandbox-agent view: (http://127\.0\.0\.1:(\d+))/ \(.*, read-only\)$")


def sandbox_agent(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [sys.executable, "-m", "sandbox_agent", "view", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_view_prints_its_url_on_one_line_and_serves_the_folder(tmp_path: Path) -> None:
    copy_real_model_run(tmp_path / "runs")
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path / "state")}
    command = [sys.executable, "-m", "sandbox_agent", "view", str(tmp_path / "runs"), "--port", "0"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = URL_LINE.match(first.rstrip("\n"))
        assert match, first
        url = match.group(1)
        assert int(match.group(2)) != 0
        assert httpx.get(url + "/", timeout=30).status_code == 200
        home = httpx.get(url + "/api/view", timeout=30).json()
        assert [run["key"] for run in home["runs"]] == ["real-model-run"]
        assert httpx.post(url + "/api/view", timeout=30).status_code == 405
    finally:
        process.send_signal(signal.SIGINT)
        output, errors = process.communicate(timeout=30)
    assert process.returncode in (0, 130), errors
    assert output.strip() == "", "the URL line is all it prints"


def test_view_listens_on_loopback_only() -> None:
    listener = view._listen(0)
    try:
        assert listener.getsockname()[0] == "127.0.0.1"
    finally:
        listener.close()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["{missing}"], "does not exist"),
        (["{file}"], "is not a folder"),
        (["{folder}", "--max-events", "0"], "--max-events"),
        (["{folder}", "--max-file-bytes", "10"], "--max-file-bytes"),
        (["{folder}", "--port", "70000"], "--port 70000 is not a port number"),
        (["{folder}", "--host", "0.0.0.0"], "unrecognized arguments: --host"),  # noqa: S104
        (["{folder}", "--public-key", "{missing}"], "public key"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    values = {
        "missing": tmp_path / "nope",
        "file": tmp_path / "file",
        "folder": tmp_path / "folder",
    }
    result = sandbox_agent(*(arg.format(**values) for arg in args), home=tmp_path / "state")
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert words.lower() in lines[0].lower(), lines[0]


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = sandbox_agent(str(tmp_path), "--port", str(port), home=tmp_path / "state")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"sandbox-agent view: 127.0.0.1:{port} is in use: choose another --port, "
        "or --port 0 for any free one"
    ]
