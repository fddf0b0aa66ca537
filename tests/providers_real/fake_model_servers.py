"""A real HTTP server on loopback that answers like the Anthropic or OpenAI API, from a script.

The real SDKs are pointed at it (``base_url=http://127.0.0.1:PORT``); it records every
request it receives (path, headers, JSON body), so a test can assert what was sent and
what was never sent. Streaming is off, as in the providers.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple


class Answer(NamedTuple):
    status: int
    body: dict[str, Any] | bytes
    """JSON-encoded when a mapping; sent as they are when bytes (a broken or hostile body)."""
    headers: dict[str, str] | None = None
    delay_s: float = 0.0
    """Seconds to think before answering (a slow model)."""


class Received(NamedTuple):
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeModelServer:
    """Answers POSTs with the scripted answers in order; 500 once the script is exhausted."""

    def __init__(self, answers: list[Answer] | None = None) -> None:
        self.answers: deque[Answer] = deque(answers or [])
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    server.received.append(Received(self.path, headers, body))
                    answer = (
                        server.answers.popleft()
                        if server.answers
                        else Answer(500, {"error": {"type": "script_exhausted"}})
                    )
                time.sleep(answer.delay_s)
                raw = answer.body
                payload = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in (answer.headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up waiting

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the test asserts on ``received`` instead."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


# Wire-format builders -------------------------------------------------------------------


def anthropic_message(
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "tool_use",
    input_tokens: int = 100,
    output_tokens: int = 20,
) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def anthropic_tool_use(name: str, args: object, call_id: str = "toolu_fake1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def openai_completion(
    message: dict[str, Any],
    *,
    finish_reason: str = "tool_calls",
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    usage: bool = True,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, **message},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def openai_tool_call(name: str, arguments: str, call_id: str = "call_fake1") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


class SilentServer:
    """Accepts connections on loopback, reads what is sent, and never answers (a model
    that thinks for ever). ``requests`` counts the requests whose head arrived."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._connections: list[socket.socket] = []
        self._stop = threading.Event()
        self.requests = 0
        self.request_seen = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _serve(self) -> None:
        self._listener.settimeout(0.05)
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(connection)
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
        except OSError:
            return
        self.requests += 1
        self.request_seen.set()

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()
        for connection in self._connections:
            connection.close()


def unused_port() -> int:
    """A loopback port nothing listens on: bound by the OS, then closed."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
    return port
