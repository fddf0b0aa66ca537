"""A run whose provider fails: what failed is in the result, the trace and the CLI's
output (issue 30), and a request cut by the wall clock is TIMEOUT, not a provider
failure. Real loopback servers; the sandbox is the fake backend (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_model_servers import Answer, FakeModelServer, SilentServer, unused_port
from real_provider_support import openai_options, paginator_run

from sandbox_agent.controller import run_task
from sandbox_agent.controller.models import RunResult
from sandbox_agent.controller.report import render
from sandbox_agent.sandbox.fake import FakeBackend, completed

UNAUTHORISED = {"error": {"type": "authentication_error", "message": "invalid x-api-key"}}


def run_against(base_url: str, ledger: Path, tmp_path: Path, **budgets: float) -> RunResult:
    config = paginator_run(openai_options(base_url, ledger), tmp_path, **budgets)
    failing = completed(exit_code=1, tests_run=3, failures=1)
    return run_task(config, sandbox=FakeBackend([failing]))


def events(result: RunResult) -> list[dict[str, object]]:
    lines = Path(result.trace_path).read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_wrong_key_is_in_the_result_the_trace_and_the_output(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    server.answers.append(Answer(401, UNAUTHORISED))

    result = run_against(f"{server.url}/v1", online, tmp_path)

    assert result.status == "FAILED"
    expected = {
        "kind": "http_status",
        "http_status": 401,
        "type": "authentication_error",
        "message": "invalid x-api-key (check OPENAI_API_KEY)",
    }
    assert result.provider_error is not None
    assert result.provider_error.model_dump() == expected
    assert result.reason == (
        "the provider failed: HTTP 401 authentication_error: invalid x-api-key "
        "(check OPENAI_API_KEY)"
    )
    (event,) = [e for e in events(result) if e["event"] == "provider_error"]
    assert event["provider_error"] == expected
    stored = json.loads((Path(result.trace_path).parent / "result.json").read_text())
    assert stored["provider_error"] == expected
    shown = render(result)
    assert (
        "provider error: HTTP 401 authentication_error: invalid x-api-key "
        "(check OPENAI_API_KEY)  [http_status]"
    ) in shown


def test_nothing_listening_reads_as_a_refused_connection(online: Path, tmp_path: Path) -> None:
    port = unused_port()

    result = run_against(f"http://127.0.0.1:{port}/v1", online, tmp_path)

    assert result.provider_error is not None
    assert result.provider_error.kind == "connection"
    assert f"connection refused at 127.0.0.1:{port}" in result.reason
    assert f"connection refused at 127.0.0.1:{port}" in render(result)


def test_a_request_cut_by_the_wall_clock_is_timeout_not_a_provider_failure(
    online: Path, tmp_path: Path
) -> None:
    with SilentServer() as silent:
        result = run_against(f"{silent.url}/v1", online, tmp_path, max_wall_seconds=2)

    assert result.status == "TIMEOUT"
    assert result.provider_error is None
    names = [e["event"] for e in events(result)]
    assert "provider_error" not in names
    (stopped,) = [e for e in events(result) if e["event"] == "request_stopped"]
    assert stopped["why"] == "timeout"
    assert "provider error" not in render(result)
