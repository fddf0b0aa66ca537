"""SR-4 (docs/SECURITY_REVIEW.md): the service and its page attacked from the network, from
another site, and through the strings a hostile model or repository puts in run records."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fake_run import FakeRunFunction
from service_harness import TOKEN, LiveServer, read_response, wait_finished

from sandbox_agent.controller.models import RunConfig, RunResult, ToolCallRecord
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.one_run import EventSink
from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix it"}
LINE_BREAKERS = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj\nk"
"""Every character Python's ``str.splitlines`` breaks on; an SSE line ends only at CR/LF."""
MARKUP = '<img src=x onerror="window.__xss=1"><svg onload="window.__xss=2"></svg>'
JS_URL = "javascript:window.__xss=3"


def hostile(tag: str) -> str:
    """An attacker-controlled string: markup, a javascript: URL and every line breaker."""
    return f"{tag} {MARKUP} {JS_URL} </script><script>window.__xss=4</script> {LINE_BREAKERS}"


class HostileRun(FakeRunFunction):
    """A run whose every model- or repository-controlled string is hostile."""

    def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
        calls = [
            ToolCallRecord(tool="read_file", ok=True, denial=None, duration_ms=1.0,
                           result={"path": hostile("path")}),
            ToolCallRecord(tool="apply_patch", ok=False, denial=hostile("denial"),
                           duration_ms=1.0, result={"message": hostile("message")}),
            ToolCallRecord(tool="apply_patch", ok=True, denial=None, duration_ms=1.0,
                           result={"files": [hostile("file")]}),
            ToolCallRecord(tool="run_tests", ok=True, denial=None, duration_ms=1.0,
                           result={"status": hostile("status"), "exit_code": hostile("code"),
                                   "tests_run": 1, "failures": 0, "attested": True,
                                   "runtime": hostile("runtime")}),
            ToolCallRecord(tool="finish", ok=True, denial=None, duration_ms=1.0,
                           result={"summary": hostile("summary")}),
        ]  # fmt: skip
        emit({"event": "run_started", "task": config.task, "note": hostile("event")})
        for step, call in enumerate(calls, start=1):
            emit({"event": hostile("kind"), "step": step, **call.model_dump()})
        result = self._result(config, "FAILED", hostile("reason"), calls, "")
        diff = f"--- a/{hostile('old')}\n+++ b/{hostile('new')}\n@@ -1 +1 @@\n"
        diff += f"-{MARKUP}\n+{JS_URL}\n"
        return result.model_copy(
            update={"diff": diff, "model_summary": hostile("model"), "model": hostile("model-name")}
        )


def sse_frames(text: str) -> list[tuple[str, str]]:
    """(event, data) of each frame, parsed as a browser's EventSource would (CR/LF only)."""
    frames = []
    for block in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            frames.append((name, "\n".join(data)))
    return frames


def raw_request(server: LiveServer, request: bytes, wait_s: float = 3.0) -> bytes:
    """Send ``request`` as is on a new connection; what came back within ``wait_s``."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=wait_s) as connection:
        connection.sendall(request)
        received = b""
        deadline = time.monotonic() + wait_s
        try:
            while b"\r\n\r\n" not in received and time.monotonic() < deadline:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            pass
    return received


# S1 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [b"/runs", b"/runs/" + b"0" * 32 + b"/cancel", b"/health"])
def test_s1_an_unauthenticated_body_is_never_waited_for(server: LiveServer, path: bytes) -> None:
    head = (
        b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 200000\r\n\r\n"
    )
    started = time.monotonic()
    answer = raw_request(server, head + b'{"fixture"')  # and then nothing more
    assert answer.startswith((b"HTTP/1.1 401", b"HTTP/1.1 405")), answer[:80]
    assert time.monotonic() - started < 2.5


def test_s1_a_streamed_body_over_the_limit_is_still_refused_with_a_token(
    server: LiveServer,
) -> None:
    def chunks() -> Any:
        for _ in range(server.settings.max_body_bytes // 1024 + 2):
            yield b" " * 1024

    with server.client() as client:
        answer = client.post("/runs", content=chunks(), headers={"content-type": "text/plain"})
        assert answer.status_code == 413
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert client.get("/runs").json()["total"] == 0
        assert client.post("/runs", json=SUBMISSION).status_code == 202  # still serving


# S2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "10.0.0.1:80"])
def test_s2_a_loopback_server_refuses_a_foreign_host_header(server: LiveServer, host: str) -> None:
    for path in ("/", "/health", "/openapi.json", "/static/app.js", "/runs"):
        answer = httpx.get(server.url + path, headers={"Host": host})
        assert answer.status_code == 421, (host, path)
        assert "Host" in answer.json()["detail"]
        assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:1", "127.0.0.1", "127.1.2.3:9", "[::1]:8"]
)
def test_s2_loopback_host_headers_are_served(server: LiveServer, host: str) -> None:
    assert httpx.get(server.url + "/health", headers={"Host": host}).status_code == 200


def test_s2_a_server_bound_to_a_public_address_takes_any_host(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(host="0.0.0.0"), FakeRunFunction())  # noqa: S104
    assert httpx.get(server.url + "/health", headers={"Host": "runs.example"}).status_code == 200


# S3 --------------------------------------------------------------------------------------


def test_s3_live_events_arrive_intact_whatever_characters_they_hold(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(), HostileRun())
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        run = wait_finished(client, run_id)
        trace = client.get(f"/runs/{run_id}/trace").text
        stored = [json.loads(line) for line in trace.split("\n") if line]  # NDJSON: LF only
        frames = sse_frames(client.get(f"/runs/{run_id}/events").text)
    assert [json.loads(data) for name, data in frames if name == "trace"] == stored
    assert frames[-1][0] == "end"
    assert json.loads(frames[-1][1]) == {"status": "FAILED", "reason": run["reason"]}
    assert LINE_BREAKERS in run["reason"]


# S4 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {**SUBMISSION, "task": "x\ud800"},
        {**SUBMISSION, "plan": {"steps": [{"tool": "read_file", "args": {"path": "\udfff"}}]}},
        {**SUBMISSION, "plan": {"steps": [{"tool": "x", "args": {"\ud800": 1}}]}},
    ],
)
def test_s4_a_lone_surrogate_is_refused_with_422_not_a_crash(
    server: LiveServer, body: dict[str, Any]
) -> None:
    with server.client() as client:
        answer = client.post(
            "/runs", content=json.dumps(body), headers={"content-type": "application/json"}
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"]
        assert client.get("/runs").json()["total"] == 0


# S5 --------------------------------------------------------------------------------------


def test_s5_a_connection_that_never_finishes_its_headers_is_closed(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    server = start_server(make_settings(head_timeout_s=0.5), FakeRunFunction(seconds=0.2))
    heads = [b"", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"]
    for head in heads:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5.0) as connection:
            connection.sendall(head)
            try:
                answer = connection.recv(4096)
            except TimeoutError:
                pytest.fail(f"the connection was still held after 5 s, head {head!r}")
        assert answer == b""


def test_s5_the_deadline_holds_again_after_a_keep_alive_answer(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    server = start_server(make_settings(head_timeout_s=0.5), FakeRunFunction(seconds=0.2))
    with socket.create_connection(("127.0.0.1", server.port), timeout=5.0) as connection:
        connection.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_response(connection).startswith(b"HTTP/1.1 200")
        connection.sendall(b"GET /health HTTP/1.1\r\n")  # and never the rest
        try:
            assert connection.recv(4096) == b""
        except TimeoutError:
            pytest.fail("the connection was still held after 5 s")


def test_s5_a_slow_but_whole_head_within_the_deadline_is_served(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    server = start_server(make_settings(head_timeout_s=3.0), FakeRunFunction(seconds=0.2))
    with socket.create_connection(("127.0.0.1", server.port), timeout=5.0) as connection:
        for part in (b"GET /health HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            connection.sendall(part)
            time.sleep(0.2)
        assert read_response(connection).startswith(b"HTTP/1.1 200")


def test_token_is_never_in_a_response(server: LiveServer) -> None:
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_finished(client, run_id)
        paths = ["/", "/static/app.js", "/openapi.json", "/health", "/fixtures", "/runs"]
        paths += [f"/runs/{run_id}{tail}" for tail in ("", "/trace", "/diff", "/events")]
        for path in paths:
            answer = client.get(path)
            assert TOKEN not in answer.text, path
            assert TOKEN not in str(answer.headers), path


# Probed and holding: the page shows every hostile string as text, and CSP stops markup.


@pytest.mark.browser
def test_hostile_strings_everywhere_stay_text_in_the_page(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    browser_page: object,
) -> None:
    from playwright.sync_api import Page, expect

    page: Page = browser_page  # type: ignore[assignment]
    server = start_server(make_settings(), HostileRun())
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with server.client() as client:
        run_id = client.post("/runs", json={**SUBMISSION, "task": hostile("task")}).json()["id"]
        wait_finished(client, run_id)
    page.goto(server.url + "/")
    page.fill("#token-input", TOKEN)
    page.click("#login button")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    page.goto(f"{server.url}/#/runs/{run_id}")
    expect(page.locator("#run-status")).to_have_text("FAILED")
    # The run viewer's transcript: the start, then each event of an unknown (hostile) kind.
    expect(page.locator("#transcript > li")).to_have_count(6)
    for where in ("#run-reason", "#run-facts", "#transcript", "#diff"):
        expect(page.locator(where)).to_contain_text(MARKUP)
    injected = "main img, main svg, main script, main iframe, main object, main embed"
    assert page.locator(injected).count() == 0
    links = page.eval_on_selector_all("a", "nodes => nodes.map(node => node.href)")
    assert not [link for link in links if not link.startswith(server.url)], links
    # The second line: even markup put on the page by a script runs nothing.
    page.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<img src=x onerror=\"window.__xss=9\">')"
    )
    page.wait_for_timeout(300)
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
