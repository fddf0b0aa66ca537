"""A real server on loopback for the service tests: uvicorn in a thread, on a free port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_run import FakeRunFunction

from browser_harness import chromium
from sandbox_agent.service import ServiceSettings, create_app
from sandbox_agent.service.models import IN_FLIGHT, PreflightStatus
from sandbox_agent.service.one_run import RunFunction
from sandbox_agent.service.server import build_server

TOKEN = "test-token-0123456789abcdef"
FIXTURE_NAMES = ("paginator", "textstats")


class LiveServer:
    """A uvicorn server running ``create_app`` in a thread; ``stop()`` ends it gracefully."""

    def __init__(self, settings: ServiceSettings, run_fn: RunFunction, **app_kwargs: Any) -> None:
        self.settings = settings
        self.app = create_app(settings, run_fn, **app_kwargs)
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = build_server(self.app, settings, log_level="warning", lifespan="on")
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def start(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)


def read_response(connection: socket.socket) -> bytes:
    """One whole HTTP/1.1 response, its head and its ``Content-Length`` body, however many
    segments it arrives in (a response is not one ``recv``: issue 21).

    Raises:
        AssertionError: the connection closed before the response was whole, or the head
            has no ``Content-Length``.
    """
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        assert chunk, f"the connection closed inside a response head: {received[:200]!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lengths = [
        int(line.partition(b":")[2])
        for line in head.split(b"\r\n")[1:]
        if line.partition(b":")[0].strip().lower() == b"content-length"
    ]
    assert len(lengths) == 1, f"no single Content-Length in {head!r}"
    while len(body) < lengths[0]:
        chunk = connection.recv(65536)
        assert chunk, f"the connection closed inside a response body: {received[:200]!r}"
        body += chunk
    assert len(body) == lengths[0], "more bytes than one response"
    return head + b"\r\n\r\n" + body


class HeldAfterFirstCall(FakeRunFunction):
    """A fake run that holds after its first tool call until ``release`` is set, so a
    test can show it saw that call while the run went on ("live") by cause, not by time.
    ``released`` says, per run, whether the release came within a minute."""

    def __init__(self, release: threading.Event, seconds: float = 0.0) -> None:
        super().__init__(seconds)
        self.release = release
        self.released: list[bool] = []

    def __call__(self, config, *, on_event=None, **kwargs):  # type: ignore[no-untyped-def]
        def emit(event: dict[str, object]) -> None:
            assert on_event is not None
            on_event(event)
            if event.get("event") == "tool_call" and event.get("step") == 1:
                self.released.append(self.release.wait(60))

        return super().__call__(config, on_event=emit, **kwargs)


def make_fixtures(root: Path) -> Path:
    folder = root / "fixtures"
    for name in FIXTURE_NAMES:
        (folder / name).mkdir(parents=True)
        (folder / name / "README").write_text("a fixture\n")
    return folder


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., ServiceSettings]:
    fixtures = make_fixtures(tmp_path)

    def build(**overrides: Any) -> ServiceSettings:
        values: dict[str, Any] = {
            "token": TOKEN,
            "db_path": tmp_path / "runs.sqlite3",
            "fixtures_dir": fixtures,
            "work_dir": tmp_path / "work",
            "max_concurrent": 2,
            "max_queue": 32,
            "rate_burst": 100,
            "rate_per_second": 50.0,
        }
        values.update(overrides)
        return ServiceSettings(**values)

    return build


def unknown_preflight() -> PreflightStatus:
    return PreflightStatus(status="unknown", detail="not checked in these tests")


@pytest.fixture
def start_server() -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []

    def start(settings: ServiceSettings, run_fn: RunFunction, **kwargs: Any) -> LiveServer:
        kwargs.setdefault("preflight_fn", unknown_preflight)
        kwargs.setdefault("reap_fn", list)
        server = LiveServer(settings, run_fn, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> LiveServer:
    return start_server(make_settings(), FakeRunFunction(seconds=0.2))


def wait_finished(client: httpx.Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    """Poll ``GET /runs/{id}`` until the run leaves QUEUED/RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        run: dict[str, Any] = client.get(f"/runs/{run_id}").raise_for_status().json()
        if run["status"] not in IN_FLIGHT:
            return run
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']}"
        time.sleep(0.05)


def wait_status(client: httpx.Client, run_id: str, status: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while client.get(f"/runs/{run_id}").json()["status"] != status:
        assert time.monotonic() < deadline, f"run {run_id} never became {status}"
        time.sleep(0.02)


@pytest.fixture
def browser_page() -> Iterator[object]:
    with chromium() as browser:
        yield browser.new_page(viewport={"width": 1200, "height": 900})
