"""SR-6: the real adapters against a hostile endpoint on loopback (each test written first).

Two real HTTP servers on 127.0.0.1 (different ports, so different origins); the real
SDKs are pointed at the first. Nothing here leaves the machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.errors import InfrastructureError
from sandbox_agent.ledger import Ledger
from sandbox_agent.providers import anthropic as anthropic_provider
from sandbox_agent.providers import openai_compat, options_for
from sandbox_agent.providers.base import ModelRequest, Provider
from sandbox_agent.providers.tooldefs import tool_definitions

ANTHROPIC_KEY = "sk-ant-api03-" + "Rw4" * 14 + "-BBBB"
OPENAI_KEY = "sk-proj-" + "Kp2" * 16

Respond = Callable[[BaseHTTPRequestHandler, bytes], None]


class Loopback:
    """A loopback HTTP server answering every POST with ``respond``; records what it got."""

    def __init__(self, respond: Respond) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.received.append((self.path, headers, body))
                respond(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    send_bytes(handler, status, json.dumps(body).encode())


def send_bytes(handler: BaseHTTPRequestHandler, status: int, payload: bytes) -> None:
    """An answer labelled JSON whose body is ``payload``, as it is."""
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("SANDBOX_AGENT_OFFLINE", "0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return tmp_path / "ledger.sqlite3"


@pytest.fixture
def servers() -> Iterator[list[Loopback]]:
    opened: list[Loopback] = []
    yield opened
    for server in opened:
        server.close()


PROVIDERS: dict[str, Callable[[Any], Provider]] = {
    "anthropic": anthropic_provider.create,
    "openai": openai_compat.create,
}
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-4o-mini"}


def make(name: str, url: str, ledger: Path) -> Provider:
    base = url if name == "anthropic" else url + "/v1"
    options = options_for(
        name, model=MODELS[name], base_url=base, ledger_path=str(ledger), run_id="sr6"
    )
    return PROVIDERS[name](options)


def request() -> ModelRequest:
    return ModelRequest(system="s", task="Fix it.", tools=tool_definitions())


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("status", [307, 308, 302])
def test_f1_a_redirect_to_another_host_is_never_followed(
    name: str, status: int, online: Path, servers: list[Loopback]
) -> None:
    """SR-6 F1: the SDKs follow redirects; a 307 took the key (x-api-key survives a
    cross-origin redirect in httpx) and the whole transcript to another origin."""
    elsewhere = Loopback(lambda handler, body: send_json(handler, 200, {}))
    servers.append(elsewhere)

    def redirect(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("location", elsewhere.url + handler.path)
        handler.send_header("content-length", "0")
        handler.end_headers()

    origin = Loopback(redirect)
    servers.append(origin)
    provider = make(name, origin.url, online)
    try:
        with pytest.raises(InfrastructureError) as raised:
            provider.complete(request())
    finally:
        provider.close()
    assert elsewhere.received == []
    assert len(origin.received) == 1  # a redirect is not retried either
    assert f"HTTP {status}" in str(raised.value)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("declared", [True, False])
def test_f2_an_answer_larger_than_the_bound_is_dropped_unread(
    name: str, declared: bool, online: Path, servers: list[Loopback]
) -> None:
    """SR-6 F2: the SDK read any body whole into memory (a hostile endpoint could send GBs).
    Now the client hangs up at the bound, whether the size is declared or not."""
    # Four times the bound (providers.http.MAX_RESPONSE_BYTES, 16 MiB), as a number: this
    # test also runs against the code before the bound (docs/REGRESSION_EVIDENCE.md).
    size = 64 * 1024 * 1024
    sent: list[int] = []

    def huge(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        if declared:
            handler.send_header("content-length", str(size))
        else:
            handler.send_header("connection", "close")
        handler.end_headers()
        chunk = b" " * 65536
        count = 0
        try:
            while count < size:
                handler.wfile.write(chunk)
                count += len(chunk)
        except OSError:
            pass  # the client hung up: what we want
        sent.append(count)
        handler.close_connection = True

    server = Loopback(huge)
    servers.append(server)
    provider = make(name, server.url, online)
    try:
        with pytest.raises(InfrastructureError) as raised:
            provider.complete(request())
    finally:
        provider.close()
    server.close()
    assert len(sent) == 1
    assert sent[0] < size
    assert "bytes" in str(raised.value)
    (summary,) = Ledger(online).summary()
    assert summary.requests == 1  # not retried: an oversized answer is not a transient error


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_f3_a_trickled_answer_ends_at_the_requests_deadline(
    name: str, online: Path, servers: list[Loopback]
) -> None:
    """SR-6 F3: httpx's timeout is per read, so one byte every second held a call (and
    the run, whose wall clock is checked only between calls) for ever."""
    import time

    stop = threading.Event()

    def trickle(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", "100000")
        handler.end_headers()
        try:
            while not stop.wait(0.2):
                handler.wfile.write(b" ")
                handler.wfile.flush()
        except OSError:
            pass

    server = Loopback(trickle)
    servers.append(server)
    provider = make(name, server.url, online)
    began = time.monotonic()
    try:
        with pytest.raises(InfrastructureError):
            provider.complete(
                ModelRequest(
                    system="s",
                    task="Fix it.",
                    tools=tool_definitions(),
                    deadline=time.monotonic() + 1.5,
                )
            )
    finally:
        stop.set()
        provider.close()
    assert time.monotonic() - began < 4.0


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_f4_enormous_or_negative_usage_never_crashes_the_meter(
    name: str, online: Path, servers: list[Loopback]
) -> None:
    """SR-6 F4: usage of 10**30 tokens overflowed SQLite's INTEGER in ``settle``: an
    OverflowError (not an InfrastructureError) crashed the run and left it unsealed."""
    answers = iter([10**30, -5, 10**400])

    def usage(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        tokens = next(answers)
        call = {"tool": "finish", "args": {"summary": "x"}}
        if name == "anthropic":
            answer: dict[str, Any] = {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": MODELS[name],
                "content": [{"type": "text", "text": json.dumps(call)}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": tokens},
            }
        else:
            answer = {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": MODELS[name],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(call)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": tokens, "completion_tokens": tokens},
            }
        send_json(handler, 200, answer)

    server = Loopback(usage)
    servers.append(server)
    provider = make(name, server.url, online)
    try:
        for _ in range(3):
            reply = provider.complete(request())
            # An impossible count is no count: settled at the reserved worst case.
            assert 0 <= reply.usage.output_tokens <= 2048
            assert 0 <= reply.usage.cost_usd < 1.0
    finally:
        provider.close()
    (summary,) = Ledger(online).summary()
    assert summary.open_reservations == 0
    assert summary.requests == 3


UNDECODABLE = {
    "not_json": b"{not json",
    "deeply_nested": b"[" * 100_000 + b"]" * 100_000,
    "not_utf8": b'{"id": "\xff\xfe"}',
}


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("body", sorted(UNDECODABLE))
def test_f12_an_answer_that_is_not_json_is_an_unreadable_answer(
    name: str, body: str, online: Path, servers: list[Loopback]
) -> None:
    """SR-6 F12 (found after the review): a 200 whose body the SDK cannot decode raised
    JSONDecodeError or RecursionError out of the provider, so the run stopped on an
    internal error, unsealed, instead of ending on a provider error."""

    server = Loopback(lambda handler, _: send_bytes(handler, 200, UNDECODABLE[body]))
    servers.append(server)
    provider = make(name, server.url, online)
    try:
        with pytest.raises(InfrastructureError, match="could not be read"):
            provider.complete(request())
    finally:
        provider.close()
    assert len(server.received) == 1  # not retried
    (summary,) = Ledger(online).summary()
    assert summary.requests == 1


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_f11_only_the_providers_own_key_leaves_and_no_other_environment_secret(
    name: str, online: Path, servers: list[Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SR-6 F11: the OpenAI SDK reads ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` from the
    environment and sent them as headers to whatever ``--base-url`` named (the operator's
    account ids to a third-party server). ``ANTHROPIC_AUTH_TOKEN`` and other secrets held."""
    other = "tok-Other-Secret-9f8e7d6c5b4a"
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", other)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-" + other)
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-" + other)
    monkeypatch.setenv("GITHUB_TOKEN", other + "-gh")
    server = Loopback(lambda handler, body: send_json(handler, 400, {}))
    servers.append(server)
    provider = make(name, server.url, online)
    try:
        with pytest.raises(InfrastructureError):
            provider.complete(request())
    finally:
        provider.close()
    key = ANTHROPIC_KEY if name == "anthropic" else OPENAI_KEY
    for _, headers, body in server.received:
        seen = json.dumps(headers) + body.decode()
        assert other not in seen
        assert seen.count(key) == 1
