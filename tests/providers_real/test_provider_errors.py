"""Provider failures a user can act on (issue 30): each real loopback server's failure
reads differently, says what to check, keeps no secret, and is retried only when a retry
can help."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fake_model_servers import Answer, FakeModelServer, SilentServer, unused_port
from real_provider_support import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, opened

from sandbox_agent.ledger import Ledger
from sandbox_agent.providers.base import ModelRequest, Provider
from sandbox_agent.providers.errors import ProviderError, ProviderFailed
from sandbox_agent.providers.options import AnthropicOptions, OpenAIOptions
from sandbox_agent.providers.tooldefs import tool_definitions

UNAUTHORISED = {
    "type": "error",
    "error": {"type": "authentication_error", "message": f"invalid x-api-key {FAKE_OPENAI_KEY}"},
}


def openai_at(base_url: str, ledger: Path, **options: object) -> Provider:
    from sandbox_agent.providers.openai_compat import create

    settings = {"model": "gpt-4o-mini", "base_url": base_url, "ledger_path": str(ledger)}
    return opened(create(OpenAIOptions.model_validate({**settings, **options})))


def anthropic_at(base_url: str, ledger: Path) -> Provider:
    from sandbox_agent.providers.anthropic import create

    settings = {"model": "claude-haiku-4-5", "base_url": base_url, "ledger_path": str(ledger)}
    return opened(create(AnthropicOptions.model_validate(settings)))


def request() -> ModelRequest:
    return ModelRequest(system="s", task="Fix it.", tools=tool_definitions())


def failure_of(provider: Provider) -> ProviderFailed:
    with pytest.raises(ProviderFailed) as failed:
        provider.complete(request())
    return failed.value


def test_a_wrong_key_says_http_401_its_type_its_message_and_the_variable(
    server: FakeModelServer, online: Path
) -> None:
    server.answers.append(Answer(401, UNAUTHORISED))

    failed = failure_of(openai_at(f"{server.url}/v1", online))

    assert failed.error == ProviderError(
        kind="http_status",
        http_status=401,
        type="authentication_error",
        message="invalid x-api-key [REDACTED] (check OPENAI_API_KEY)",
    )
    assert failed.attempts == 1
    assert len(server.received) == 1  # not retried: a retry cannot fix a key
    assert FAKE_OPENAI_KEY not in str(failed)


def test_the_anthropic_provider_reads_its_own_error_shape(
    server: FakeModelServer, online: Path
) -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    server.answers.append(Answer(401, {**body, "echo": FAKE_ANTHROPIC_KEY}))

    failed = failure_of(anthropic_at(server.url, online))

    assert failed.error.line() == (
        "HTTP 401 authentication_error: bad key (check ANTHROPIC_API_KEY)"
    )


def test_nothing_listening_is_a_refused_connection_at_once_not_12_seconds_of_retries(
    online: Path,
) -> None:
    port = unused_port()
    began = time.monotonic()

    failed = failure_of(openai_at(f"http://127.0.0.1:{port}/v1", online))

    assert time.monotonic() - began < 5  # the old retries waited 7.5-15 s
    assert failed.error.kind == "connection"
    assert failed.error.message == (
        f"connection refused at 127.0.0.1:{port} (is the server running? check --base-url)"
    )
    assert failed.attempts == 1
    (spend,) = Ledger(online).summary()
    assert (spend.settled_usd, spend.open_reservations) == (0.0, 0)  # nothing was sent


def test_a_server_error_is_retried_and_then_says_what_the_server_said(
    online: Path,
) -> None:
    busy = {"error": {"type": "server_error", "message": "the engine\nis\toverloaded"}}
    with FakeModelServer([Answer(500, busy, {"retry-after": "0"})] * 5) as server:
        failed = failure_of(openai_at(f"{server.url}/v1", online))

        assert len(server.received) == 5
    assert failed.error == ProviderError(
        kind="http_status",
        http_status=500,
        type="server_error",
        message="the engine is overloaded",
    )
    assert failed.attempts == 5


def test_a_garbage_answer_says_what_came_back_and_from_where(
    server: FakeModelServer, online: Path
) -> None:
    server.answers.append(Answer(200, b"<html>\x1b[31mnot an API</html>"))

    failed = failure_of(openai_at(f"{server.url}/v1", online))

    port = server.url.rsplit(":", 1)[1]
    assert failed.error.kind == "unreadable_answer"
    assert failed.error.message == (
        f"the API's answer could not be read: HTTP 200 from 127.0.0.1:{port}, "
        "application/json, body '<html> [31mnot an API</html>'"
    )
    assert len(server.received) == 1


def test_a_server_that_never_answers_times_out_saying_where(online: Path) -> None:
    with SilentServer() as silent:
        provider = openai_at(f"{silent.url}/v1", online, request_timeout_seconds=0.3)
        provider._meter.sleep = lambda seconds: None  # type: ignore[attr-defined]

        failed = failure_of(provider)
        address = silent.url.removeprefix("http://")

    assert failed.error.kind == "timeout"
    assert failed.error.message == f"no answer in time at {address}"
    assert failed.attempts == 5  # timeouts are retried: the next attempt may be quicker


def test_wrong_key_and_wrong_url_read_differently(server: FakeModelServer, online: Path) -> None:
    server.answers.append(Answer(401, UNAUTHORISED))
    wrong_key = failure_of(openai_at(f"{server.url}/v1", online)).error.line()
    wrong_url = failure_of(openai_at(f"http://127.0.0.1:{unused_port()}/v1", online)).error.line()

    assert "OPENAI_API_KEY" in wrong_key
    assert "--base-url" in wrong_url
    assert "OPENAI_API_KEY" not in wrong_url
