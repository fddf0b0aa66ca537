"""The openai provider, through the real SDK, against a loopback chat completions server."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from fake_model_servers import Answer, FakeModelServer, openai_completion, openai_tool_call
from real_provider_support import FAKE_OPENAI_KEY, opened

from sandbox_agent.errors import BudgetExhausted, InfrastructureError
from sandbox_agent.ledger import Ledger
from sandbox_agent.providers.base import (
    CUT_OFF_NOTE,
    Exchange,
    ModelRequest,
    Provider,
)
from sandbox_agent.providers.openai_compat import create
from sandbox_agent.providers.options import OpenAIOptions
from sandbox_agent.providers.tooldefs import tool_definitions

READ = '{"tool": "read_file", "args": {"path": "paginator/core.py"}}'
OBSERVATION = '{"tool": "read_file", "ok": true, "result": {"text": "def page(): ..."}}'


def provider(server: FakeModelServer, ledger: Path, **options: object) -> Provider:
    settings: dict[str, object] = {
        "model": "gpt-4o-mini",
        "base_url": f"{server.url}/v1",
        "ledger_path": str(ledger),
        "run_id": "run-1",
        "max_output_tokens": 1000,
        **options,
    }
    return opened(create(OpenAIOptions.model_validate(settings)))


def request(*history: Exchange) -> ModelRequest:
    return ModelRequest(
        system="You fix bugs.", task="Fix it.", tools=tool_definitions(), history=[*history]
    )


def tool_reply(name: str, arguments: str) -> Answer:
    return Answer(200, openai_completion({"tool_calls": [openai_tool_call(name, arguments)]}))


def test_tool_calls_are_mapped_both_ways(server: FakeModelServer, online: Path) -> None:
    server.answers.append(tool_reply("search", '{"pattern": "def page"}'))
    history = [Exchange(reply=READ, observation=OBSERVATION), Exchange(reply="hm", observation="?")]

    reply = provider(server, online).complete(request(*history))

    assert json.loads(reply.text) == {"tool": "search", "args": {"pattern": "def page"}}
    assert reply.usage.cost_usd == pytest.approx((100 * 0.15 + 20 * 0.60) / 1e6)
    (sent,) = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {FAKE_OPENAI_KEY}"
    body = sent.body
    assert body["max_tokens"] == 1000
    assert body.get("stream") in (None, False)
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        t["name"] for t in tool_definitions()
    ]
    system, task, call, result, text, answer = body["messages"]
    assert system == {"role": "system", "content": "You fix bugs."}
    assert task == {"role": "user", "content": "Fix it."}
    (tool_call,) = call["tool_calls"]
    assert call["role"] == "assistant"
    assert tool_call["function"]["name"] == "read_file"
    assert json.loads(tool_call["function"]["arguments"]) == {"path": "paginator/core.py"}
    assert result == {"role": "tool", "tool_call_id": tool_call["id"], "content": OBSERVATION}
    assert text == {"role": "assistant", "content": "hm"}
    assert answer == {"role": "user", "content": "?"}


def test_malformed_arguments_are_passed_on_as_is(server: FakeModelServer, online: Path) -> None:
    server.answers.append(tool_reply("read_file", '{"path": "a.py"'))

    reply = provider(server, online).complete(request())

    assert reply.text == '{"path": "a.py"'  # not repaired: the controller rejects it
    assert any("not JSON" in note for note in reply.notes)


def test_several_tool_calls_keep_the_first(server: FakeModelServer, online: Path) -> None:
    calls = [
        openai_tool_call("list_files", "{}", "call_a"),
        openai_tool_call("finish", '{"summary": "x"}', "call_b"),
    ]
    server.answers.append(Answer(200, openai_completion({"tool_calls": calls})))

    reply = provider(server, online).complete(request())

    assert json.loads(reply.text) == {"tool": "list_files", "args": {}}
    assert any("only the first" in note for note in reply.notes)


def test_a_reply_without_a_tool_call_is_its_text(server: FakeModelServer, online: Path) -> None:
    text_only = openai_completion({"content": "All done!"}, finish_reason="stop")
    server.answers.append(Answer(200, text_only))

    reply = provider(server, online).complete(request())

    assert reply.text == "All done!"
    assert "no tool call" in reply.notes


def test_a_refusal_is_passed_on_and_noted(server: FakeModelServer, online: Path) -> None:
    refusal = openai_completion({"refusal": "I can't help with that."}, finish_reason="stop")
    server.answers.append(Answer(200, refusal))

    reply = provider(server, online).complete(request())

    assert reply.text == "I can't help with that."
    assert reply.notes == ("refusal",)


def test_429_then_success_reserves_the_retry(server: FakeModelServer, online: Path) -> None:
    limited = {"error": {"type": "rate_limit_exceeded", "message": "slow down", "code": None}}
    server.answers.extend(
        [Answer(429, limited, {"retry-after": "0"}), tool_reply("list_files", "{}")]
    )

    reply = provider(server, online).complete(request())

    assert json.loads(reply.text)["tool"] == "list_files"
    assert len(server.received) == 2
    (spend,) = Ledger(online).summary()
    assert (spend.requests, spend.open_reservations) == (2, 0)


def test_a_budget_overrun_refuses_the_next_request_before_sending_it(
    server: FakeModelServer, online: Path
) -> None:
    expensive = openai_completion(
        {"tool_calls": [openai_tool_call("list_files", "{}")]},
        prompt_tokens=4_000_000,
        completion_tokens=1000,
    )
    server.answers.extend([Answer(200, expensive), Answer(200, expensive)])
    model = provider(server, online, max_cost_usd=0.0012, max_tokens=10_000_000)
    # 4M input tokens reported, past the estimate: booked at the request's worst case
    # (~$0.0008, never the $0.60 reported: SR-13 F4), so a second worst case passes the cap.
    model.complete(request())

    with pytest.raises(BudgetExhausted) as refused:
        model.complete(request())

    assert (refused.value.budget, refused.value.limit) == ("cost", 0.0012)
    assert len(server.received) == 1


def test_the_experiment_budget_is_shared_by_runs(server: FakeModelServer, online: Path) -> None:
    used = openai_completion(
        {"tool_calls": [openai_tool_call("list_files", "{}")]},
        prompt_tokens=10_000,
        completion_tokens=1000,
    )
    server.answers.extend([Answer(200, used)] * 2)
    # A request reserves $0.0006 to $0.001 (estimated input + 1000 output tokens); the
    # first settles at that worst case (10 000 input tokens reported, past the estimate:
    # SR-13 F4), so the second run's first request would pass $0.0012.
    first = provider(server, online, run_id="a", experiment_budget_usd=0.0012)
    second = provider(server, online, run_id="b", experiment_budget_usd=0.0012)
    first.complete(request())

    with pytest.raises(BudgetExhausted) as refused:
        second.complete(request())

    assert refused.value.budget == "experiment_cost"
    assert len(server.received) == 1


def test_missing_usage_is_settled_at_the_reserved_worst_case(
    server: FakeModelServer, online: Path
) -> None:
    body = openai_completion({"tool_calls": [openai_tool_call("list_files", "{}")]}, usage=False)
    server.answers.append(Answer(200, body))

    reply = provider(server, online).complete(request())

    assert reply.usage.output_tokens == 1000
    assert reply.usage.cost_usd > 0


def test_the_key_never_appears_in_errors(server: FakeModelServer, online: Path) -> None:
    echoing = {"error": {"type": "invalid_request_error", "message": f"key {FAKE_OPENAI_KEY}"}}
    server.answers.append(Answer(401, echoing))

    with pytest.raises(InfrastructureError) as failed:
        provider(server, online).complete(request())

    text = "".join(traceback.format_exception(failed.value)) + repr(failed.value)
    assert "HTTP 401 invalid_request_error: key [REDACTED] (check OPENAI_API_KEY)" in text
    assert FAKE_OPENAI_KEY not in text
    assert FAKE_OPENAI_KEY[8:28] not in text


def test_the_official_api_gets_a_required_single_tool_call(
    server: FakeModelServer, online: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No --base-url means the official API; the SDK's own variable points it here instead.
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.answers.append(tool_reply("list_files", "{}"))

    provider(server, online, base_url=None).complete(request())

    body = server.received[0].body
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)
    assert body["max_completion_tokens"] == 1000


@pytest.mark.parametrize(
    "body", [{"choices": [{"message": None}]}, {"choices": [{"message": {"tool_calls": 7}}]}]
)
def test_an_unreadable_answer_is_a_provider_failure_not_a_crash(
    server: FakeModelServer, online: Path, body: dict[str, object]
) -> None:
    server.answers.append(Answer(200, body))

    with pytest.raises(InfrastructureError, match="could not be read"):
        provider(server, online).complete(request())

    (spend,) = Ledger(online).summary()
    assert (spend.open_reservations, spend.requests) == (0, 1)
    assert spend.settled_usd > 0  # maybe billed: settled at the reserved worst case


def test_the_request_timeout_is_a_flag_for_slow_servers(
    server: FakeModelServer, online: Path
) -> None:
    """A model on a busy CPU answered after the default 120 s: each attempt was cut and
    started again, and the run ended before a turn (seen with the anthropic provider
    against the local server). ``--request-timeout`` gives such a server its time."""
    slow = Answer(*tool_reply("read_file", READ)[:2], delay_s=1.5)
    server.answers.extend([slow, slow])
    hasty = provider(server, online, request_timeout_seconds=0.3, max_calls=2)
    with pytest.raises((InfrastructureError, BudgetExhausted)):
        hasty.complete(request())
    # Its own server: a hasty attempt the first server reads late would take the answer
    # scripted for the patient one.
    with FakeModelServer([slow]) as other:
        patient = provider(other, online, request_timeout_seconds=10)
        assert json.loads(patient.complete(request()).text)["tool"] == "read_file"


def test_json_schema_requests_carry_signatures_and_a_grammar_without_bounds(
    server: FakeModelServer, online: Path
) -> None:
    """What a llama-server receives under ``json_schema`` (the local default): the tools
    as one-line signatures with examples in the system prompt, and a response schema a
    newer llama.cpp compiles (no ``maxLength: 262144``, no titles)."""
    answer = openai_completion(
        {"content": '{"tool": "list_files", "args": {}}'}, finish_reason="stop"
    )
    server.answers.append(Answer(200, answer))

    reply = provider(server, online, tool_protocol="json_schema").complete(request())

    assert json.loads(reply.text) == {"tool": "list_files", "args": {}}
    (sent,) = server.received
    body = sent.body
    assert "tools" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You fix bugs.\n\nTools (")
    assert "- read_file(path, start_line?, end_line?): " in system
    assert '  Example: {"tool": "run_tests", "args": {}}' in system
    assert "maxLength" not in json.dumps(body)
    assert '"title"' not in json.dumps(body)
    schema = body["response_format"]["json_schema"]["schema"]
    assert [b["properties"]["tool"]["const"] for b in schema["oneOf"]] == [
        t["name"] for t in tool_definitions()
    ]


def test_a_reply_cut_at_the_limit_is_marked_truncated(
    server: FakeModelServer, online: Path
) -> None:
    cut = openai_completion(
        {"content": '{"tool": "apply_patch", "args": {"ed'}, finish_reason="length"
    )
    server.answers.append(Answer(200, cut))

    reply = provider(server, online, tool_protocol="json_schema").complete(request())

    assert reply.truncated
    assert CUT_OFF_NOTE in reply.notes
