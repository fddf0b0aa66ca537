"""The anthropic provider, through the real SDK, against a loopback Messages API server."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from fake_model_servers import Answer, FakeModelServer, anthropic_message, anthropic_tool_use
from real_provider_support import FAKE_ANTHROPIC_KEY, opened

from sandbox_agent.errors import BudgetExhausted, InfrastructureError
from sandbox_agent.ledger import Ledger
from sandbox_agent.providers.anthropic import create
from sandbox_agent.providers.base import Exchange, ModelRequest, Provider
from sandbox_agent.providers.options import AnthropicOptions
from sandbox_agent.providers.tooldefs import tool_definitions

READ = '{"tool": "read_file", "args": {"path": "paginator/core.py"}}'
OBSERVATION = '{"tool": "read_file", "ok": true, "result": {"text": "def page(): ..."}}'


def provider(server: FakeModelServer, ledger: Path, **options: object) -> Provider:
    settings: dict[str, object] = {
        "model": "claude-sonnet-5-5",
        "base_url": server.url,
        "ledger_path": str(ledger),
        "run_id": "run-1",
        "max_output_tokens": 1000,
        **options,
    }
    return opened(create(AnthropicOptions.model_validate(settings)))


def request(*history: Exchange) -> ModelRequest:
    return ModelRequest(
        system="You fix bugs.",
        task="Fix the paginator.",
        tools=tool_definitions(),
        history=[*history],
    )


def test_tool_calls_are_mapped_both_ways(server: FakeModelServer, online: Path) -> None:
    server.answers.append(
        Answer(200, anthropic_message([anthropic_tool_use("run_tests", {"selector": None})]))
    )
    history = [Exchange(reply=READ, observation=OBSERVATION), Exchange(reply="", observation="{}")]

    reply = provider(server, online).complete(request(*history))

    assert json.loads(reply.text) == {"tool": "run_tests", "args": {"selector": None}}
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (100, 20)
    assert reply.usage.cost_usd == pytest.approx((100 * 2 + 20 * 10) / 1e6)
    (sent,) = server.received
    assert sent.path == "/v1/messages"
    auth = sent.headers.get("x-api-key") or sent.headers.get("authorization", "")
    assert auth.removeprefix("Bearer ") == FAKE_ANTHROPIC_KEY
    body = sent.body
    assert body["system"] == "You fix bugs."
    assert body["max_tokens"] == 1000
    assert "stream" not in body or body["stream"] is False
    assert [tool["name"] for tool in body["tools"]] == [t["name"] for t in tool_definitions()]
    user, call, result, text, answer = body["messages"]
    assert user == {"role": "user", "content": "Fix the paginator."}
    (tool_use,) = call["content"]
    assert call["role"] == "assistant"
    assert tool_use["type"] == "tool_use"
    assert (tool_use["name"], tool_use["input"]) == ("read_file", {"path": "paginator/core.py"})
    (tool_result,) = result["content"]
    assert result["role"] == "user"
    assert tool_result == {
        "type": "tool_result",
        "tool_use_id": tool_use["id"],
        "content": OBSERVATION,
    }
    # A reply that was no tool call goes back as text, never as an empty block.
    assert text == {"role": "assistant", "content": [{"type": "text", "text": "(no output)"}]}
    assert answer == {"role": "user", "content": "{}"}


def test_several_tool_calls_keep_the_first_and_say_so(
    server: FakeModelServer, online: Path
) -> None:
    blocks = [
        {"type": "text", "text": "Let me look."},
        anthropic_tool_use("list_files", {}, "toolu_a"),
        anthropic_tool_use("finish", {"summary": "x"}, "toolu_b"),
    ]
    server.answers.append(Answer(200, anthropic_message(blocks)))

    reply = provider(server, online).complete(request())

    assert json.loads(reply.text) == {"tool": "list_files", "args": {}}
    assert any("only the first" in note for note in reply.notes)


def test_malformed_tool_input_is_passed_on_raw(server: FakeModelServer, online: Path) -> None:
    server.answers.append(
        Answer(200, anthropic_message([anthropic_tool_use("read_file", ["not", "an", "object"])]))
    )

    reply = provider(server, online).complete(request())

    # Not fixed, not validated: the controller counts it as an invalid output.
    assert json.loads(reply.text) == {"tool": "read_file", "args": ["not", "an", "object"]}


def test_a_reply_without_a_tool_call_is_its_text(server: FakeModelServer, online: Path) -> None:
    text_only = anthropic_message(
        [{"type": "text", "text": "I think it works."}], stop_reason="end_turn"
    )
    server.answers.append(Answer(200, text_only))

    reply = provider(server, online).complete(request())

    assert reply.text == "I think it works."
    assert "no tool call" in reply.notes


def test_a_refusal_is_passed_on_and_noted(server: FakeModelServer, online: Path) -> None:
    server.answers.append(Answer(200, anthropic_message([], stop_reason="refusal")))

    reply = provider(server, online).complete(request())

    assert reply.text == ""
    assert "refusal" in reply.notes


def test_429_then_success_reserves_the_retry(server: FakeModelServer, online: Path) -> None:
    rate_limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server.answers.extend(
        [
            Answer(429, rate_limited, {"retry-after": "0"}),
            Answer(200, anthropic_message([anthropic_tool_use("list_files", {})])),
        ]
    )

    reply = provider(server, online).complete(request())

    assert json.loads(reply.text)["tool"] == "list_files"
    assert len(server.received) == 2
    (spend,) = Ledger(online).summary()
    assert spend.requests == 2  # the retry was reserved too
    assert spend.open_reservations == 0
    assert spend.settled_usd == pytest.approx((100 * 2 + 20 * 10) / 1e6)  # the 429 cost nothing


def test_a_budget_overrun_refuses_the_next_request_before_sending_it(
    server: FakeModelServer, online: Path
) -> None:
    expensive = anthropic_message(
        [anthropic_tool_use("list_files", {})], input_tokens=300_000, output_tokens=1000
    )
    server.answers.extend([Answer(200, expensive), Answer(200, expensive)])
    model = provider(server, online, max_cost_usd=0.02)
    # 300k input tokens reported, past the estimate: booked at the request's worst case
    # (~$0.013, never the $0.60 reported: SR-13 F4), so a second worst case passes the cap.
    model.complete(request())

    with pytest.raises(BudgetExhausted) as refused:
        model.complete(request())

    assert (refused.value.budget, refused.value.limit) == ("cost", 0.02)
    assert len(server.received) == 1


def test_the_key_never_appears_in_errors(server: FakeModelServer, online: Path) -> None:
    echoing = {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": f"bad key {FAKE_ANTHROPIC_KEY}",
        },
    }
    server.answers.append(Answer(401, echoing))

    with pytest.raises(InfrastructureError) as failed:
        provider(server, online).complete(request())

    text = "".join(traceback.format_exception(failed.value)) + repr(failed.value)
    assert "HTTP 401 authentication_error: bad key [REDACTED] (check ANTHROPIC_API_KEY)" in text
    assert FAKE_ANTHROPIC_KEY not in text
    assert FAKE_ANTHROPIC_KEY[:20] not in text


def test_server_errors_are_retried_a_bounded_number_of_times(
    server: FakeModelServer, online: Path
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    server.answers.extend([Answer(529, overloaded, {"retry-after": "0"})] * 10)

    with pytest.raises(InfrastructureError, match="HTTP 529 overloaded_error"):
        provider(server, online).complete(request())

    assert len(server.received) == 5  # the first attempt and DEFAULT_MAX_RETRIES retries
    (spend,) = Ledger(online).summary()
    assert (spend.requests, spend.settled_usd, spend.open_reservations) == (5, 0.0, 0)


def test_an_unreadable_answer_is_a_provider_failure_not_a_crash(
    server: FakeModelServer, online: Path
) -> None:
    server.answers.append(Answer(200, {"content": None, "usage": None}))

    with pytest.raises(InfrastructureError, match="could not be read"):
        provider(server, online).complete(request())

    (spend,) = Ledger(online).summary()
    assert spend.open_reservations == 0
