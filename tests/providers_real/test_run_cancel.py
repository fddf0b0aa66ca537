"""Cancel that stops (issue 30): the run's cancel (a signal, the service's cancel) stops
the model request in flight and the wait before a retry, and the run ends sealed
``CANCELLED`` in a second or two. Real loopback servers that never answer or fail; the
sandbox is the fake backend (the CLI's own test, with Docker, is test_run_cli.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_model_servers import (
    Answer,
    FakeModelServer,
    SilentServer,
    openai_completion,
    openai_tool_call,
)
from real_provider_support import openai_options, paginator_run

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import RunResult
from sandbox_agent.ledger import Ledger
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend

REQUEST_TIMEOUT_S = 120.0
"""What the old code waited for before it saw the cancel (the default request time-out)."""
STOPPED_WITHIN_S = 10.0
"""A second or two is expected; ten tells that from a wait for the request's time-out."""


def config(base_url: str, ledger: Path, tmp_path: Path) -> RunConfig:
    options = openai_options(base_url, ledger, request_timeout_seconds=REQUEST_TIMEOUT_S)
    return paginator_run(options, tmp_path)


def run_cancelled_when(
    seen: threading.Event,
    base_url: str,
    ledger: Path,
    tmp_path: Path,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[RunResult, float]:
    """Run, cancel once ``seen`` is set; the result and the seconds from cancel to end."""
    cancel = CancelToken()
    cancelled_at: list[float] = []

    def cancel_when_seen() -> None:
        if seen.wait(60):
            cancelled_at.append(time.monotonic())
            cancel.cancel()

    canceller = threading.Thread(target=cancel_when_seen)
    canceller.start()
    result = run_task(
        config(base_url, ledger, tmp_path), cancel=cancel, sandbox=FakeBackend(), on_event=on_event
    )
    ended = time.monotonic()
    canceller.join()
    assert cancelled_at, "the request never reached the server"
    return result, ended - cancelled_at[0]


def events(result: RunResult) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(result.trace_path).read_text().splitlines()]


def test_a_cancel_stops_the_request_in_flight(online: Path, tmp_path: Path) -> None:
    with SilentServer() as silent:
        result, took = run_cancelled_when(silent.request_seen, f"{silent.url}/v1", online, tmp_path)
        assert silent.requests == 1  # stopped, not retried

    assert result.status == "CANCELLED"
    assert took < STOPPED_WITHIN_S
    names = [e["event"] for e in events(result)]
    assert "provider_error" not in names
    assert "tool_call" not in names
    assert names[-1] == "run_finished"
    (stopped,) = [e for e in events(result) if e["event"] == "request_stopped"]
    assert stopped["why"] == "cancelled"
    (spend,) = Ledger(online).summary()
    assert spend.open_reservations == 0  # settled (at the worst case: it may be billed)
    assert (Path(result.trace_path).parent / "evidence.json").exists()  # sealed


def test_a_cancel_ends_the_wait_before_a_retry(online: Path, tmp_path: Path) -> None:
    busy = {"error": {"type": "server_error", "message": "busy"}}
    retrying = threading.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "provider_retry":
            retrying.set()

    with FakeModelServer([Answer(503, busy, {"retry-after": "50"})]) as server:
        result, took = run_cancelled_when(
            retrying, f"{server.url}/v1", online, tmp_path, on_event=on_event
        )
        assert len(server.received) == 1  # no retry after the cancel

    assert result.status == "CANCELLED"
    assert took < STOPPED_WITHIN_S  # not the 50 s the server asked for
    (retry,) = [e for e in events(result) if e["event"] == "provider_retry"]
    assert retry["attempt"] == 1
    assert retry["provider_error"] == {
        "kind": "http_status",
        "http_status": 503,
        "type": "server_error",
        "message": "busy",
    }


def test_retries_are_announced_in_the_trace_before_their_wait(online: Path, tmp_path: Path) -> None:
    busy = {"error": {"type": "server_error", "message": "try later"}}
    finish = {"tool_calls": [openai_tool_call("finish", '{"summary": "x"}')]}
    answers = [Answer(500, busy, {"retry-after": "0"})] * 2 + [
        Answer(200, openai_completion(finish))
    ]
    with FakeModelServer(answers) as server:
        result = run_task(config(f"{server.url}/v1", online, tmp_path), sandbox=FakeBackend())

    retries = [e for e in events(result) if e["event"] == "provider_retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert all(r["retries"] == 4 for r in retries)
    assert retries[0]["provider_error"]["message"] == "try later"
    assert result.provider_error is None
