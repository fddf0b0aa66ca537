"""SR-13 F8: what the result reports as spent is what the ledger holds for the run.

A model request cut by the wall clock or by a cancel is settled in the ledger at its
worst case (the server may have done, and billed, the work), but ``result.json`` said
``budget_used.cost_usd: 0.0``: only answered requests were counted, so the result
under-reported spend. So did an attempt that timed out and was retried. Real loopback
servers; the sandbox is the fake backend.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fake_model_servers import Answer, FakeModelServer, SilentServer, openai_completion
from fake_model_servers import openai_tool_call as tool_call
from real_provider_support import openai_options, paginator_run

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import RunResult
from sandbox_agent.ledger import Ledger
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend


def config(
    base_url: str, ledger: Path, tmp_path: Path, *, wall_s: float = 300, request_s: float = 120
) -> RunConfig:
    options = openai_options(base_url, ledger, request_timeout_seconds=request_s)
    return paginator_run(options, tmp_path, max_wall_seconds=wall_s)


def assert_reports_what_the_ledger_holds(result: RunResult, ledger: Path) -> None:
    (spend,) = Ledger(ledger).summary()
    assert spend.open_reservations == 0
    assert spend.settled_usd > 0  # the cut request, at its worst case
    used = result.budget_used
    assert used.cost_usd == spend.settled_usd
    assert (used.input_tokens, used.output_tokens) == (spend.input_tokens, spend.output_tokens)


def test_sr13_f8_a_request_cut_by_the_wall_clock_is_reported_as_spent(
    online: Path, tmp_path: Path
) -> None:
    with SilentServer() as silent:
        result = run_task(
            config(f"{silent.url}/v1", online, tmp_path, wall_s=4), sandbox=FakeBackend()
        )
        assert silent.requests == 1, "the request was not sent before the wall clock ran out"
    assert result.status == "TIMEOUT", result.reason
    assert_reports_what_the_ledger_holds(result, online)


def test_sr13_f8_a_request_cut_by_a_cancel_is_reported_as_spent(
    online: Path, tmp_path: Path
) -> None:
    cancel = CancelToken()
    with SilentServer() as silent:

        def cancel_when_seen() -> None:
            if silent.request_seen.wait(60):
                cancel.cancel()

        canceller = threading.Thread(target=cancel_when_seen)
        canceller.start()
        result = run_task(
            config(f"{silent.url}/v1", online, tmp_path), cancel=cancel, sandbox=FakeBackend()
        )
        canceller.join()
    assert result.status == "CANCELLED", result.reason
    assert_reports_what_the_ledger_holds(result, online)


def test_sr13_f8_an_attempt_that_timed_out_and_was_retried_is_reported_as_spent(
    online: Path, tmp_path: Path
) -> None:
    """The first attempt times out (settled at its worst case) and the retry answers:
    the result counts both, not only the answer's usage."""
    finish = {"tool_calls": [tool_call("finish", '{"summary": "x"}')]}
    answers = [
        Answer(200, openai_completion(finish), delay_s=3.0),
        Answer(200, openai_completion(finish)),
    ]
    began = time.monotonic()
    with FakeModelServer(answers) as server:
        result = run_task(
            config(f"{server.url}/v1", online, tmp_path, request_s=1), sandbox=FakeBackend()
        )
        assert len(server.received) == 2
    assert time.monotonic() - began < 30
    assert result.budget_used.iterations == 1
    assert_reports_what_the_ledger_holds(result, online)
