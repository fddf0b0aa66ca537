"""SR-13 F4: usage an endpoint reports past the request's reserved worst case is booked at
the worst case, never as reported; the reported numbers stay visible, as an anomaly.

A real loopback HTTP server answering like an OpenAI-compatible endpoint, the real
``openai`` provider (its SDK, meter and bounded transport) and the real SQLite ledger.
The run tests use the fake sandbox backend (no Docker).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fake_model_servers import Answer, FakeModelServer, openai_completion, openai_tool_call
from real_provider_support import opened, paginator_run

from sandbox_agent.controller import run_task
from sandbox_agent.ledger import Ledger, SpendLimits
from sandbox_agent.providers import openai_compat
from sandbox_agent.providers.base import ModelRequest
from sandbox_agent.providers.options import OpenAIOptions
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.trace.progress import ProgressLines

HUGE = 999_000_000
"""What the reviewer's endpoint reported: under the 10^9 a count may be, far past any cap."""
PRICES = {"price_per_mtok_in": 10.0, "price_per_mtok_out": 10.0}


def options(server: FakeModelServer, ledger: Path, **more: object) -> OpenAIOptions:
    return OpenAIOptions(
        model="m", base_url=f"{server.url}/v1", ledger_path=str(ledger), **PRICES, **more
    )


def text_answer(prompt_tokens: int, completion_tokens: int) -> Answer:
    code = "```python\ndef add(a, b):\n    return a + b\n```"
    return Answer(
        200,
        openai_completion(
            {"content": code},
            finish_reason="stop",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        ),
    )


def text_request() -> ModelRequest:
    return ModelRequest(system="s", task="fix add", tools=[], mode="text", max_output_tokens=1024)


def rows(ledger: Path) -> list[tuple[int, int, int, int, int, str]]:
    with sqlite3.connect(ledger) as conn:
        return conn.execute(
            "SELECT reserved_micros, reserved_tokens, cost_micros, input_tokens, output_tokens, "
            "outcome FROM requests ORDER BY id"
        ).fetchall()


def test_sr13_f4_usage_past_the_worst_case_is_booked_at_the_worst_case(
    server: FakeModelServer, online: Path
) -> None:
    server.answers.append(text_answer(HUGE, HUGE))
    provider = opened(openai_compat.create(options(server, online, max_cost_usd=1.0)))

    reply = provider.complete(text_request())

    assert server.received[0].body["max_tokens"] == 1024
    ((reserved_micros, reserved_tokens, cost, booked_in, booked_out, outcome),) = rows(online)
    assert cost == reserved_micros <= 1_000_000  # the worst case, within --max-cost-usd 1
    assert booked_out == 1024  # the max_tokens that was sent
    assert booked_in + booked_out == reserved_tokens  # the input estimate, not 999M
    assert outcome == "over_reported"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (booked_in, booked_out)
    assert reply.usage.cost_usd == reserved_micros / 1_000_000
    # The reported numbers stay visible as reported, and the reply says what happened.
    anomaly = reply.usage_anomaly
    assert anomaly is not None
    assert (anomaly.reported_input_tokens, anomaly.reported_output_tokens) == (HUGE, HUGE)
    assert (anomaly.reserved_input_tokens, anomaly.reserved_output_tokens) == (booked_in, 1024)
    assert any("past the request's reserved worst case" in note for note in reply.notes)
    (spend,) = Ledger(online).summary()
    assert spend.remaining_usd is not None
    assert spend.remaining_usd >= 10.0 - 1.0


def test_sr13_f4_output_past_max_tokens_alone_is_cut_to_max_tokens(
    server: FakeModelServer, online: Path
) -> None:
    """Only the count past its cap is cut: a plausible input count is booked as reported."""
    server.answers.append(text_answer(100, 5_000))
    provider = opened(openai_compat.create(options(server, online)))

    reply = provider.complete(text_request())

    ((reserved_micros, _, cost, booked_in, booked_out, outcome),) = rows(online)
    assert (booked_in, booked_out, outcome) == (100, 1024, "over_reported")
    assert cost < reserved_micros
    assert reply.usage_anomaly is not None
    assert reply.usage_anomaly.reported_output_tokens == 5_000


def test_sr13_f4_holds_usage_within_the_worst_case_is_booked_as_reported(
    server: FakeModelServer, online: Path
) -> None:
    server.answers.append(text_answer(100, 20))
    provider = opened(openai_compat.create(options(server, online)))

    reply = provider.complete(text_request())

    ((_, _, cost, booked_in, booked_out, outcome),) = rows(online)
    assert (booked_in, booked_out, outcome) == (100, 20, "ok")
    assert cost == 120 * 10  # 120 tokens at $10 per million
    assert reply.usage_anomaly is None
    assert not any("worst case" in note for note in reply.notes)


def test_sr13_f4_the_ledger_never_settles_above_the_reservation(tmp_path: Path) -> None:
    """Whatever a caller passes, a settled row counts at most what was reserved for it."""
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    limits = SpendLimits(max_cost_usd=1, experiment_budget_usd=10, max_calls=9, max_tokens=10**6)
    reservation = ledger.reserve(
        experiment="e", run_id="r", model="m", micros=20_000, tokens=2_000, limits=limits
    )

    ledger.settle(
        reservation,
        micros=19_980_000_000,
        input_tokens=HUGE,
        output_tokens=HUGE,
        outcome="ok",
    )

    ((_, _, cost, booked_in, booked_out, _),) = rows(ledger.path)
    assert cost == 20_000
    assert booked_in + booked_out <= 2_000
    (spend,) = ledger.summary()
    assert spend.remaining_usd == pytest.approx(10 - 0.02)


def test_sr13_f4_a_run_books_at_most_its_cap_and_traces_the_anomaly(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    """The reviewer's case through a whole run: one answer reporting 999M + 999M tokens."""
    finish = openai_tool_call("finish", json.dumps({"summary": "done"}))
    huge = openai_completion({"tool_calls": [finish]}, prompt_tokens=HUGE, completion_tokens=HUGE)
    server.answers.append(Answer(200, huge))
    config = paginator_run(options(server, online, max_cost_usd=1.0), tmp_path)

    result = run_task(config, sandbox=FakeBackend([completed(exit_code=0, tests_run=3)]))

    assert result.budget_used.cost_usd <= 1.0
    assert result.budget_used.output_tokens <= 2048
    (spend,) = Ledger(online).summary()
    assert spend.remaining_usd is not None
    assert spend.remaining_usd >= 9.0
    events = [json.loads(line) for line in Path(result.trace_path).read_text().splitlines()]
    (anomaly,) = [e for e in events if e["event"] == "usage_anomaly"]
    assert anomaly["reported"] == {"input_tokens": HUGE, "output_tokens": HUGE}
    assert anomaly["reserved"]["output_tokens"] == 2048
    assert anomaly["booked"]["cost_usd"] <= 1.0
    (turn,) = [e for e in events if e["event"] == "model_turn"]
    assert turn["usage"]["output_tokens"] == 2048
    assert any("past the request's reserved worst case" in note for note in turn["notes"])
    # What `run` prints: the anomaly on a line of its own, the turn still with its call.
    progress = ProgressLines()
    lines = [line for event in events for line in progress.lines(event)]
    assert (
        "  model usage reported past the request's worst case (999,000,000 in, 999,000,000 "
        "out): booked at the worst case (" in "\n".join(lines)
    )
    assert any(line.startswith("turn 1: finish") for line in lines), lines
    # A later run of the same experiment is not blocked by the first one's report.
    server.answers.append(Answer(200, openai_completion({"tool_calls": [finish]})))
    again = run_task(config, sandbox=FakeBackend([completed(exit_code=0, tests_run=3)]))
    assert again.status != "BUDGET_EXHAUSTED", again.reason
