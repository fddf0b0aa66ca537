"""`sandbox-agent run` as a user runs it, a real subprocess against real loopback model
servers and Docker (issue 30): progress on stderr as the run goes, retries said while
they wait; Ctrl-C stops a model that never answers, says so, seals the run CANCELLED and
exits 130."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_model_servers import (
    Answer,
    FakeModelServer,
    SilentServer,
    openai_completion,
    openai_tool_call,
)
from real_provider_support import FAKE_OPENAI_KEY

from sandbox_agent.settings import PROJECT_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "Page numbers start at 1; fix the paginator."
STOPPED_WITHIN_S = 20.0
"""A second or two is expected (plus removing the sandboxes made ahead on a busy host);
the old run waited for the request's 120 s time-out."""


def environment(tmp_path: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "OPENAI_BASE_URL")
    }
    return env | {
        "SANDBOX_AGENT_OFFLINE": "0",
        "PYTHONFAULTHANDLER": "1",  # a stuck run shows its threads (stop_showing_stacks)
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "TMPDIR": str(tmp_path),
    }


def start_run(base_url: str, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "sandbox_agent", "run", "--fixture", "paginator",
            "--task", TASK, "--provider", "openai", "--base-url", base_url,
            "--model", "gpt-4o-mini", "--price-per-mtok-in", "0", "--price-per-mtok-out", "0",
            "--ledger", str(tmp_path / "ledger.sqlite3"), "--trace-dir", str(tmp_path / "runs"),
            "--run-id", "cli", *extra]  # fmt: skip
    return subprocess.Popen(
        argv,
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Its own session: the signal goes to the run alone, as a terminal's Ctrl-C would.
        start_new_session=True,
    )


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_model_that_never_answers(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    out = err = ""
    with SilentServer() as silent:
        process = start_run(f"{silent.url}/v1", tmp_path, "--quiet")
        try:
            assert wait_or_end(silent.request_seen, process), process.communicate(timeout=5)
            signalled = time.monotonic()
            process.send_signal(signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                out, err = process.communicate(timeout=120)
            took = time.monotonic() - signalled
        finally:
            hung = stop_showing_stacks(process)
        requests = silent.requests

    assert not hung, f"still running 120 s after {signum.name}; its threads:\n{hung}"
    assert process.returncode == code, err
    assert took < STOPPED_WITHIN_S
    assert f"cancelling ({signum.name}): stopping the model request" in err
    assert "status:        CANCELLED" in out
    assert requests == 1
    run_dir = tmp_path / "runs" / "cli"
    assert (run_dir / "evidence.json").exists()
    trace = (run_dir / "trace.jsonl").read_text()
    assert '"event": "request_stopped"' in trace
    assert '"event": "tool_call"' not in trace


def stop_showing_stacks(process: subprocess.Popen[str]) -> str:
    """End ``process`` if it still runs, with SIGABRT first so that its fault handler
    prints every thread's stack; what it printed on stderr then ("" if it had ended).
    Its pipes are closed either way."""
    if process.poll() is not None:
        process.communicate()  # read to the end: the pipes close
        return ""
    process.send_signal(signal.SIGABRT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return err or "(nothing on stderr)"


def wait_or_end(event: threading.Event, process: subprocess.Popen[str]) -> bool:
    """Wait for ``event`` while ``process`` runs; False when it ended first."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if event.wait(0.1):
            return True
        if process.poll() is not None:
            return False
    return False


def reference_answers() -> list[Answer]:
    plan = json.loads((PROJECT_ROOT / "fixtures" / "paginator.plan.json").read_text())
    return [
        Answer(200, openai_completion({"tool_calls": [
            openai_tool_call(step["tool"], json.dumps(step["args"]), f"call_{number}")]}))
        for number, step in enumerate(plan["steps"])
    ]  # fmt: skip


def test_progress_shows_each_turn_and_each_retry_while_the_run_goes(tmp_path: Path) -> None:
    busy = {"error": {"type": "server_error", "message": "warming up"}}
    answers = [Answer(500, busy, {"retry-after": "0"}), *reference_answers()]
    with FakeModelServer(answers) as server:
        process = start_run(f"{server.url}/v1", tmp_path)
        out, err = process.communicate(timeout=300)

    assert process.returncode == 0, out + err
    lines = err.splitlines()
    assert lines[0].startswith("run cli: paginator, provider openai, unittest on runc")
    assert (
        "  model request failed: HTTP 500 server_error: warming up; retry 1 of 4 in 0.0 s"
    ) in lines
    turns = [line for line in lines if line.startswith("turn ")]
    assert [line.split(" -> ")[0] for line in turns] == [
        "turn 1: list_files .",
        "turn 2: read_file paginator/core.py",
        "turn 3: run_tests all tests",
        "turn 4: apply_patch paginator/core.py (1 edit)",
        "turn 5: run_tests all tests",
        "turn 6: finish 'Page numbers start at 1: page N now starts at ite…'",
    ]
    assert all(" tokens)" in line and "model " in line for line in turns)
    assert any(line.startswith("final tests: PASSED") for line in lines)
    assert lines[-1].startswith("finished: SUCCEEDED")
    assert "status:        SUCCEEDED" in out  # the result still goes to stdout


@pytest.mark.parametrize("flag", ["--quiet", "--json"])
def test_quiet_and_json_runs_print_no_progress(tmp_path: Path, flag: str) -> None:
    with FakeModelServer(reference_answers()) as server:
        process = start_run(f"{server.url}/v1", tmp_path, flag)
        out, err = process.communicate(timeout=300)

    assert process.returncode == 0, out + err
    assert err == ""
