"""SR-8, the service part (docs/review/SR-8-service.md): an outside review's findings against
``sandbox-agent serve`` on loopback, each test written against the code before its fix.

Real uvicorn servers on loopback (in this process, or in their own for signals and
``kill -9``), real SQLite; no mocks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_run import FakeRunFunction
from service_harness import TOKEN, LiveServer, wait_finished, wait_status

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.models import PreflightStatus
from sandbox_agent.service.one_run import EventSink
from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix it"}
FAKE_SERVER = Path(__file__).with_name("fake_server_main.py")
URL_LINE = re.compile(r"^sandbox-agent serve: (http://127\.0\.0\.1:\d+)/ ")
AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()


# Helpers ---------------------------------------------------------------------------------


def connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def read_until_closed(connection: socket.socket, within_s: float) -> tuple[bytes, bool]:
    """What the server sends until it closes the connection (True), or until ``within_s``
    passes with the connection still open (False). Never one ``recv`` for a message."""
    received = b""
    deadline = time.monotonic() + within_s
    while (left := deadline - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return received, True
        if not chunk:
            return received, True
        received += chunk
    return received, False


def read_answer_head(connection: socket.socket, within_s: float = 10.0) -> bytes:
    """Bytes up to the end of one answer's head (status line and headers)."""
    received = b""
    deadline = time.monotonic() + within_s
    while b"\r\n\r\n" not in received:
        left = deadline - time.monotonic()
        assert left > 0, f"no whole answer head within {within_s} s: {received[:200]!r}"
        connection.settimeout(left)
        chunk = connection.recv(65536)
        assert chunk, f"closed before a whole answer head: {received[:200]!r}"
        received += chunk
    return received


class FakeServerProcess:
    """``fake_server_main.py`` in its own process: the service as ``serve`` runs it."""

    def __init__(self, settings: ServiceSettings, tmp_path: Path, *extra: str) -> None:
        self.port_file = tmp_path / f"port-{time.monotonic_ns()}"
        args = [settings.db_path, settings.fixtures_dir, settings.work_dir, self.port_file]
        self.process = subprocess.Popen(
            [sys.executable, str(FAKE_SERVER), *map(str, args), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._output: list[bytes] = []
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while not self.port_file.exists() or not self.port_file.read_text():
            assert self.process.poll() is None, "the server process ended at start"
            assert time.monotonic() < deadline, "the server process did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port_file.read_text()}"
        with self.client() as client:
            while True:
                try:
                    client.get("/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the server process did not answer"
                    time.sleep(0.05)

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)

    @property
    def output(self) -> str:
        """What the process wrote (stdout and stderr: uvicorn's access log is on stdout)."""
        return b"".join(self._output).decode(errors="replace")

    def wait(self, within_s: float) -> int | None:
        """The exit code, or None when the process is still running after ``within_s``."""
        try:
            code = self.process.wait(within_s)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._reader.join(10)

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:
            for line in self.process.stdout:
                self._output.append(line)


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[Callable[..., FakeServerProcess]]:
    started: list[FakeServerProcess] = []

    def start(settings: ServiceSettings, *extra: str) -> FakeServerProcess:
        server = FakeServerProcess(settings, tmp_path, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def stored_runs(db_path: Path) -> dict[str, tuple[str, float | None]]:
    """Each run's (status, started_at), read from the database itself."""
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT id, status, started_at FROM runs").fetchall()
    return {run_id: (status, started) for run_id, status, started in rows}


# S8-1: every connection has a deadline, whatever the client sends --------------------------


@pytest.mark.parametrize(
    ("path", "host", "auth"),
    [
        (b"/health", b"127.0.0.1", b""),  # a public path answers without reading the body
        (b"/runs", b"attacker.example", b""),  # so does the 421 of a foreign Host
        (b"/health", b"127.0.0.1", AUTH),
    ],
)
def test_s8_1_an_answered_request_whose_body_never_ends_is_closed(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    path: bytes,
    host: bytes,
    auth: bytes,
) -> None:
    server = start_server(make_settings(head_timeout_s=0.5, body_timeout_s=0.5), FakeRunFunction())
    with connect(server) as connection:
        connection.sendall(
            b"POST " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + auth
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )  # fmt: skip
        read_answer_head(connection)
        connection.sendall(b"{")  # one byte of the body: it disarmed every timer
        _, closed = read_until_closed(connection, within_s=5.0)
    assert closed, "the connection was still held 5 s after its answer"


def test_s8_1_a_body_sent_slowly_with_the_token_ends_at_the_body_deadline(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(body_timeout_s=1.0), FakeRunFunction())
    body = json.dumps(SUBMISSION).encode()
    with connect(server) as connection:
        connection.sendall(
            b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH
            + b"Content-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n"
        )  # fmt: skip
        began = time.monotonic()
        closed = False
        for byte in body[:-1]:  # a byte every 0.2 s, never the last one
            try:
                connection.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            _, closed = read_until_closed(connection, within_s=0.2)
            if closed:
                break
        assert closed, "a trickled body held the connection past its deadline"
        assert time.monotonic() - began < 5.0
    with server.client() as client:
        assert client.get("/runs").json()["total"] == 0


def test_s8_1_connections_beyond_the_limit_are_refused_at_once(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(max_connections=4), FakeRunFunction())
    held = [connect(server) for _ in range(4)]
    try:
        # The listener may hand the four over a little later than connect() returns.
        deadline = time.monotonic() + 10
        while True:
            with connect(server) as extra:
                extra.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                answer, closed = read_until_closed(extra, within_s=5.0)
            if answer.startswith(b"HTTP/1.1 503"):
                break
            assert time.monotonic() < deadline, answer[:200]
        assert closed
        assert b"retry-after" in answer.lower()
    finally:
        for connection in held:
            connection.close()
    deadline = time.monotonic() + 10
    while httpx.get(server.url + "/health").status_code != 200:
        assert time.monotonic() < deadline, "the server did not take connections again"
        time.sleep(0.05)


class ManyEventsRun(FakeRunFunction):
    """A run that stores about 12 MiB of trace events: an answer no socket buffer holds."""

    def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
        for step in range(200):
            emit({"event": "bulk", "step": step, "text": "x" * 60_000})
        return super()._run(config, cancel, emit)


def test_s8_1_a_client_that_reads_nothing_of_its_answer_is_disconnected(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(send_timeout_s=1.0), ManyEventsRun())
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_finished(client, run_id)
    with socket.socket() as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.settimeout(30)
        connection.connect(("127.0.0.1", server.port))
        connection.sendall(
            f"GET /runs/{run_id}/trace HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + AUTH + b"Connection: close\r\n\r\n"
        )  # fmt: skip
        # Reads nothing, and watches only for the server hanging up (RST: error, hang-up).
        watch = select.poll()
        watch.register(connection, select.POLLERR | select.POLLHUP)
        assert watch.poll(30_000), "a client that read nothing was still connected after 30 s"
        answer, closed = read_until_closed(connection, within_s=30.0)
    assert closed
    assert not answer.endswith(b"0\r\n\r\n"), "the whole answer was kept for a silent client"


# S8-9: a head over 16 KiB is refused however it arrives -----------------------------------

PAD = b"X-Pad: " + b"a" * 20_000 + b"\r\n"


@pytest.mark.parametrize(
    ("parts", "statuses"),
    [
        ([b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + PAD + b"\r\n"], [b"400"]),
        ([b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: " + b"a" * 10_000,
          b"\r\nX-B: " + b"b" * 10_000 + b"\r\n\r\n"], [b"400"]),
        ([b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
          b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + PAD + b"\r\n"], [b"200", b"400"]),
    ],
    ids=["one-read", "two-reads-each-under-16-kib", "pipelined-after-a-small-one"],
)  # fmt: skip
def test_s8_9_a_head_over_16_kib_is_refused_however_it_arrives(
    server: LiveServer, parts: list[bytes], statuses: list[bytes]
) -> None:
    with connect(server) as connection:
        for part in parts:
            connection.sendall(part)
            time.sleep(0.1)
        answer, closed = read_until_closed(connection, within_s=10.0)
    assert re.findall(rb"HTTP/1.1 (\d{3})", answer) == statuses, answer[:300]
    assert closed


def test_s8_9_a_head_just_under_16_kib_is_served(server: LiveServer) -> None:
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    pad = b"X-Pad: " + b"a" * (16 * 1024 - len(head) - 200) + b"\r\n"
    with connect(server) as connection:
        connection.sendall(head + pad + b"\r\n")
        answer, _ = read_until_closed(connection, within_s=10.0)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


# S8-2: one run's failure, or the store's, kills no worker ----------------------------------


def hold_write_lock(db_path: Path) -> sqlite3.Connection:
    """Another process's view: a write transaction held open on the service's database."""
    other = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_s8_2_a_store_error_outlasting_the_busy_timeout_kills_no_worker(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    settings = make_settings(max_concurrent=1, db_busy_timeout_s=0.5)
    # The run makes its writes only once the lock is held: on a loaded machine a test
    # thread late by a second could find the run's writes made, and /health staying ok.
    locked = threading.Event()

    class HeldUntilLocked(FakeRunFunction):
        def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
            locked.wait(60)
            return super()._run(config, cancel, emit)

    server = start_server(settings, HeldUntilLocked(seconds=1.0))
    with server.client() as client:
        first = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, first, "RUNNING")
        other = hold_write_lock(settings.db_path)
        locked.set()
        try:
            # Every write the run makes now fails after the busy timeout.
            deadline = time.monotonic() + 30
            while (health := client.get("/health")).status_code == 200:
                assert time.monotonic() < deadline, "/health still says ok"
                time.sleep(0.1)
            assert health.status_code == 503
            assert health.json()["status"] == "unavailable"
            refused = client.post("/runs", json=SUBMISSION)
            assert refused.status_code == 503, refused.text
            assert "retry-after" in refused.headers
        finally:
            other.rollback()
            other.close()
        # The store is back: the first run's result is recorded, the worker takes new runs.
        assert wait_finished(client, first)["status"] == "SUCCEEDED"
        second = client.post("/runs", json=SUBMISSION).json()["id"]
        assert wait_finished(client, second)["status"] == "SUCCEEDED"
        assert client.get("/health").json() == {"status": "ok"}
        third = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, third, "RUNNING")
        assert client.post(f"/runs/{third}/cancel").status_code == 202
        assert wait_finished(client, third)["status"] == "CANCELLED"


class ExitingRun(FakeRunFunction):
    """A run function that raises what ``except Exception`` does not catch."""

    def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
        if config.task == "exit":
            raise SystemExit(3)
        return super()._run(config, cancel, emit)


def test_s8_2_a_run_raising_system_exit_does_not_end_its_worker(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(max_concurrent=1), ExitingRun())
    with server.client() as client:
        failed = client.post("/runs", json={**SUBMISSION, "task": "exit"}).json()["id"]
        assert wait_finished(client, failed)["status"] == "SANDBOX_ERROR"
        fine = client.post("/runs", json=SUBMISSION).json()["id"]
        assert wait_finished(client, fine)["status"] == "SUCCEEDED"


class UnstorableEventRun(FakeRunFunction):
    """A run whose trace holds an event the store cannot encode (a lone surrogate)."""

    def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
        deep: list[Any] = []
        for _ in range(2000):
            deep = [deep]
        emit({"event": "odd", "text": "\ud800"})
        emit({"event": "deep", "value": deep})
        return super()._run(config, cancel, emit)


def test_s8_2_an_event_the_store_cannot_encode_does_not_fail_the_run(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(), UnstorableEventRun())
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        assert wait_finished(client, run_id)["status"] == "SUCCEEDED"
        events = client.get(f"/runs/{run_id}/trace").text.splitlines()
    assert [json.loads(line)["event"] for line in events[:2]] == ["event_unstorable"] * 2
    assert json.loads(events[-1])["event"] == "run_finished"


# S8-3: one server per database --------------------------------------------------------------


def test_s8_3_a_second_server_on_the_same_database_is_refused(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    settings = make_settings()
    first = start_server(settings, FakeRunFunction(seconds=3.0))
    with first.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, run_id, "RUNNING")
        env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path / "home")}
        command = [
            sys.executable, "-m", "sandbox_agent", "serve", "--port", "0",
            "--db", str(settings.db_path), "--token-file", str(tmp_path / "token2"),
        ]  # fmt: skip
        second = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            code = second.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            second.kill()
            _, errors = second.communicate(timeout=30)
        assert code == 2, f"a second server started on the same database: {errors[-300:]}"
        assert errors.count("\n") == 1, errors
        assert "--db" in errors
        assert wait_finished(client, run_id)["status"] == "SUCCEEDED"


def test_s8_3_a_second_store_on_the_same_database_is_refused(tmp_path: Path) -> None:
    from sandbox_agent.service.store import DatabaseInUse, RunStore

    first = RunStore(tmp_path / "runs.sqlite3")
    try:
        with pytest.raises(DatabaseInUse, match="--db"):
            RunStore(tmp_path / "runs.sqlite3")
    finally:
        first.close()
    RunStore(tmp_path / "runs.sqlite3").close()  # free again once the first is closed


# S8-4: SIGTERM cancels runs and starts no queued one, within a bounded time -----------------


def stream_events(url: str, run_id: str, lines: list[str]) -> threading.Thread:
    def follow() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        timeout = httpx.Timeout(60, connect=10)
        url_events = f"{url}/runs/{run_id}/events"
        with (
            contextlib.suppress(httpx.HTTPError),
            httpx.stream("GET", url_events, headers=headers, timeout=timeout) as stream,
        ):
            for line in stream.iter_lines():  # seen by the test as each one comes
                lines.append(line)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def test_s8_4_sigterm_with_a_live_stream_cancels_runs_and_starts_no_queued_one(
    make_settings: Callable[..., ServiceSettings],
    fake_server: Callable[..., FakeServerProcess],
) -> None:
    settings = make_settings()
    server = fake_server(settings, "60", "--max-concurrent", "1")
    with server.client() as client:
        running = client.post("/runs", json=SUBMISSION).json()["id"]
        queued = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, running, "RUNNING")
    lines: list[str] = []
    follower = stream_events(server.url, running, lines)
    deadline = time.monotonic() + 10
    while not any(line.startswith("event: trace") for line in lines):
        assert time.monotonic() < deadline, "the stream sent nothing"
        time.sleep(0.05)
    began = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = server.wait(within_s=20)
    took = time.monotonic() - began
    runs = stored_runs(settings.db_path)
    assert code is not None, f"still running 20 s after SIGTERM; runs: {runs}"
    assert took < 15
    assert runs[queued] == ("INTERRUPTED", None), "the queued run was started or left queued"
    assert runs[running][0] == "INTERRUPTED"
    follower.join(10)
    assert not follower.is_alive()


def test_s8_4_sigterm_stops_within_the_stop_timeout_when_a_run_ignores_its_cancel(
    make_settings: Callable[..., ServiceSettings],
    fake_server: Callable[..., FakeServerProcess],
) -> None:
    settings = make_settings()
    server = fake_server(settings, "60", "--stubborn", "stop_timeout_s=2")
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, run_id, "RUNNING")
    server.process.send_signal(signal.SIGTERM)
    # Stopped by the stop timeout (2 s), not by the run's end (60 s): timing the stop
    # any closer is a benchmark's business, and a loaded machine slows a shutdown.
    assert server.wait(within_s=20) is not None, "still running 20 s after SIGTERM"
    assert stored_runs(settings.db_path)[run_id][0] == "INTERRUPTED"


# S8-5: X-Forwarded-For is not believed unless a proxy is named ----------------------------


def test_s8_5_forwarded_for_from_loopback_does_not_reset_the_rate_limit(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(rate_burst=2, rate_per_second=0.01), FakeRunFunction())
    with server.client() as client:
        answers = [
            client.post("/runs", json=SUBMISSION, headers={"X-Forwarded-For": f"10.0.0.{n}"})
            for n in range(3)
        ]
    assert [answer.status_code for answer in answers] == [202, 202, 429]


def test_s8_5_a_named_trusted_proxy_is_believed(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    settings = make_settings(rate_burst=1, rate_per_second=0.01, trusted_proxies=("127.0.0.1",))
    server = start_server(settings, FakeRunFunction())
    with server.client() as client:
        answers = [
            client.post("/runs", json=SUBMISSION, headers={"X-Forwarded-For": f"10.0.0.{n}"})
            for n in (1, 2, 2)
        ]
    assert [answer.status_code for answer in answers] == [202, 202, 429]


def test_s8_5_forwarded_for_text_never_reaches_the_access_log(
    make_settings: Callable[..., ServiceSettings],
    fake_server: Callable[..., FakeServerProcess],
) -> None:
    server = fake_server(make_settings(), "0", "--log-level", "info")
    forged = "forged-client-text"
    answer = httpx.get(server.url + "/health", headers={"X-Forwarded-For": forged})
    assert answer.status_code == 200
    server.process.send_signal(signal.SIGTERM)
    assert server.wait(within_s=30) is not None
    log = server.output
    assert '"GET /health HTTP/1.1" 200' in log
    assert forged not in log
    assert re.search(r"127\.0\.0\.1:\d+ - \"GET /health", log), log[-500:]


# S8-6: state is private whatever the umask ---------------------------------------------------


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("loose_umask")
def test_s8_6_the_database_and_the_service_folders_are_private(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    settings = make_settings(
        db_path=tmp_path / "state" / "runs.sqlite3", work_dir=tmp_path / "state" / "work"
    )
    seen: list[int] = []

    class PlanModeRun(FakeRunFunction):
        def __call__(self, config: RunConfig, **kwargs: Any) -> RunResult:
            assert config.provider_options.plan_path is not None
            seen.append(mode(Path(config.provider_options.plan_path)))
            return super().__call__(config, **kwargs)

    server = start_server(settings, PlanModeRun())
    plan = {"steps": [{"tool": "finish", "args": {"summary": "done"}}]}
    with server.client() as client:
        run_id = client.post("/runs", json={**SUBMISSION, "plan": plan}).json()["id"]
        wait_finished(client, run_id)
    files = [settings.db_path, *settings.db_path.parent.glob("runs.sqlite3-*")]
    assert {path.name: mode(path) for path in files} == {path.name: 0o600 for path in files}
    assert seen == [0o600]
    folders = [settings.db_path.parent, settings.work_dir, settings.plans_dir, settings.trace_dir]
    assert {str(path): mode(path) for path in folders} == {str(path): 0o700 for path in folders}


@pytest.mark.usefixtures("loose_umask")
def test_s8_6_serve_keeps_its_state_private_with_the_token_file_elsewhere(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [
        sys.executable, "-m", "sandbox_agent", "serve", "--port", "0",
        "--token-file", str(tmp_path / "elsewhere" / "token"),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        while (match := URL_LINE.match(line := process.stdout.readline())) is None:
            assert line, "serve ended without printing its URL"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{match.group(1)}/health", timeout=30).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    service = home / "service"
    assert mode(service) == 0o700
    database = [path for path in service.iterdir() if path.name.startswith("runs.sqlite3")]
    assert database
    assert {path.name: mode(path) for path in database} == {p.name: 0o600 for p in database}


# S8-7: inputs that can only be user errors are answered 4xx, never 500 ---------------------


def nested(depth: int, opener: str = '{"a": ', closer: str = "}", leaf: str = "1") -> str:
    return opener * depth + leaf + closer * depth


@pytest.mark.parametrize(
    "args",
    [
        nested(300),
        nested(300, "[", "]"),
        nested(150, '{"a": [', "]}"),
        nested(3000),
    ],
    ids=["objects-300", "lists-300", "mixed-300", "objects-3000"],
)
def test_s8_7_deeply_nested_plan_arguments_are_a_4xx(server: LiveServer, args: str) -> None:
    body = '{"fixture": "paginator", "task": "x", "plan": {"steps": [{"tool": "read_file", '
    body += '"args": {"path": ' + args + "}}]}}"
    with server.client() as client:
        answer = client.post("/runs", content=body, headers={"content-type": "application/json"})
        assert 400 <= answer.status_code < 500, answer.text[:200]
        assert client.get("/runs").json()["total"] == 0


def test_s8_7_plan_arguments_nested_within_the_bound_are_taken(server: LiveServer) -> None:
    args = json.loads(nested(30))
    with server.client() as client:
        plan = {"steps": [{"tool": "read_file", "args": {"path": args}}]}
        answer = client.post("/runs", json={**SUBMISSION, "plan": plan})
        assert answer.status_code == 202, answer.text


def raw_events_request(server: LiveServer, run_id: str, last_event_id: bytes) -> bytes:
    with connect(server) as connection:
        connection.sendall(
            f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + AUTH + b"Connection: close\r\nLast-Event-ID: " + last_event_id + b"\r\n\r\n"
        )  # fmt: skip
        answer, closed = read_until_closed(connection, within_s=20.0)
    assert closed, answer[:300]
    return answer


@pytest.mark.parametrize(
    "last_event_id",
    ["²".encode("latin-1"), "¹³".encode("latin-1"), b"1\xb2", "\u0661".encode(), b"-1", b"abc"],
)
def test_s8_7_a_last_event_id_that_is_no_event_number_is_a_422(
    server: LiveServer, last_event_id: bytes
) -> None:
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_finished(client, run_id)
    answer = raw_events_request(server, run_id, last_event_id)
    assert answer.startswith(b"HTTP/1.1 422"), answer[:300]


@pytest.mark.parametrize(
    "last_event_id",
    [
        b"9" * 19,
        b"1" * 20,
        b"9223372036854775807",
    ],
)
def test_s8_7_a_huge_last_event_id_is_a_whole_stream_with_its_end(
    server: LiveServer, last_event_id: bytes
) -> None:
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_finished(client, run_id)
    answer = raw_events_request(server, run_id, last_event_id)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert answer.endswith(b"0\r\n\r\n"), "the stream broke off"
    assert b"event: end" in answer
    assert b"event: trace" not in answer


def test_s8_7_a_last_event_id_longer_than_twenty_digits_is_a_422(server: LiveServer) -> None:
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
    assert raw_events_request(server, run_id, b"1" * 25).startswith(b"HTTP/1.1 422")


# S8-8: what a killed server left is cleaned at the next start ------------------------------


def test_s8_8_plan_files_of_a_killed_server_are_removed_at_start(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    fake_server: Callable[..., FakeServerProcess],
) -> None:
    settings = make_settings()
    killed = fake_server(settings, "60")
    plan = {"steps": [{"tool": "finish", "args": {"summary": "done"}}]}
    with killed.client() as client:
        ids = [client.post("/runs", json={**SUBMISSION, "plan": plan}).json()["id"] for _ in "ab"]
        for run_id in ids:
            wait_status(client, run_id, "RUNNING")
    assert sorted(path.stem for path in settings.plans_dir.iterdir()) == sorted(ids)
    foreign = settings.plans_dir / ("f" * 32 + ".json")  # a run this database never had
    foreign.write_text("{}")
    killed.kill()

    start_server(settings, FakeRunFunction())
    assert sorted(path.name for path in settings.plans_dir.iterdir()) == [foreign.name]


# S8-10 (found looking for the same classes elsewhere): a slow preflight check held every
# other /preflight request, each on a worker thread of the server's pool ----------------


def test_s8_10_a_slow_preflight_check_makes_no_other_request_wait(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    release = threading.Event()
    calls: list[float] = []

    def slow_check() -> PreflightStatus:
        calls.append(time.monotonic())
        release.wait(60)  # a Docker daemon that answers slowly
        return PreflightStatus(status="ok", detail="all checks passed")

    server = start_server(make_settings(), FakeRunFunction(), preflight_fn=slow_check)
    first: list[httpx.Response] = []
    with server.client() as client:
        waiting = threading.Thread(target=lambda: first.append(client.get("/preflight")))
        waiting.start()
        try:
            deadline = time.monotonic() + 10
            while not calls:
                assert time.monotonic() < deadline, "the first check did not start"
                time.sleep(0.02)
            with server.client() as other:
                began = time.monotonic()
                answers = [other.get("/preflight") for _ in range(3)]
                took = time.monotonic() - began
        finally:
            release.set()
            waiting.join(30)
    assert took < 5, "a request waited for another request's check"
    assert [answer.json()["status"] for answer in answers] == ["unknown"] * 3
    assert "running" in answers[0].json()["detail"]
    assert first[0].json()["status"] == "ok"
    assert len(calls) == 1


@pytest.mark.docker
@pytest.mark.usefixtures("loose_umask")
def test_s8_6_a_real_run_through_serve_leaves_only_private_files(tmp_path: Path) -> None:
    from sandbox_agent.settings import state_home

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(state_home() / "image.json", home / "image.json")  # the runner image built
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [
        sys.executable, "-m", "sandbox_agent", "serve", "--port", "0",
        "--token-file", str(tmp_path / "elsewhere" / "token"),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        while (match := URL_LINE.match(line := process.stdout.readline())) is None:
            assert line, "serve ended without printing its URL"
        token = (tmp_path / "elsewhere" / "token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=match.group(1), headers=headers, timeout=30) as client:
            run_id = client.post("/runs", json={**SUBMISSION, "fixture": "paginator"}).json()
            run = wait_finished(client, run_id["id"], timeout=240)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    assert run["status"] == "SUCCEEDED", run["reason"]  # a 077 umask hides nothing a run needs
    service = home / "service"
    made = [service, *service.rglob("*")]
    assert any(path.name == "trace.jsonl" for path in made)
    loose = {
        str(path.relative_to(home)): oct(mode(path))
        for path in made
        if mode(path) != (0o700 if path.is_dir() else 0o600)
    }
    assert loose == {}


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--body-timeout", "0"], "--body-timeout"),
        (["--send-timeout", "-1"], "--send-timeout"),
        (["--stop-timeout", "0"], "--stop-timeout"),
        (["--max-connections", "0"], "--max-connections"),
        (["--trusted-proxy", "proxy.example"], "--trusted-proxy"),
    ],
)
def test_s8_new_serve_flags_out_of_range_name_their_flag(
    tmp_path: Path, flags: list[str], named: str
) -> None:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"sandbox-agent serve: {named}:"), done.stderr
