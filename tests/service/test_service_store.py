"""The SQLite store and the executor on their own: terminal states are written once, events
are bounded, and a run that outlives the server's stop cannot crash its worker."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_run import FakeRunFunction
from service_harness import LiveServer

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.executor import RunManager
from sandbox_agent.service.models import SubmitRequest
from sandbox_agent.service.ratelimit import RateLimiter, retry_after_header
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import MAX_EVENT_BYTES, RunStore, StoredRun


def _queued(store: RunStore, run_id: str = "a" * 32) -> str:
    store.insert(StoredRun(run_id, "QUEUED", "", "f", "t", "scripted", None, 1.0, None, None, None))
    return run_id


def test_a_terminal_status_is_written_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "db")
    run_id = _queued(store)
    assert store.mark_running(run_id)
    assert not store.mark_running(run_id)
    assert store.finish(run_id, "CANCELLED", "cancelled")
    assert not store.finish(run_id, "SUCCEEDED", "too late")
    assert store.interrupt_in_flight("stopped") == []
    stored = store.get(run_id)
    assert stored is not None
    assert (stored.status, stored.reason) == ("CANCELLED", "cancelled")


def test_events_are_bounded_in_size(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "db")
    run_id = _queued(store)
    store.append_event(run_id, 1, {"event": "tool_call", "reply": "x" * MAX_EVENT_BYTES})
    store.append_event(run_id, 2, {"event": "model_turn"})
    events = store.events_after(run_id, 0)
    assert json.loads(events[0].event_json)["event"] == "event_too_large"
    assert [event.seq for event in store.events_after(run_id, 1)] == [2]


def test_a_closed_store_ignores_late_writes(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "db")
    run_id = _queued(store)
    store.close()
    assert store.finish(run_id, "SUCCEEDED", "late") is False
    store.append_event(run_id, 1, {"event": "late"})
    assert store.get(run_id) is None
    assert RunStore(tmp_path / "db").get(run_id) is not None


class StubbornRun(FakeRunFunction):
    """Ignores cancellation for a while, like a controller stuck in a step."""

    def __call__(self, config: RunConfig, **kwargs: Any) -> RunResult:
        time.sleep(0.5)
        kwargs["cancel"] = CancelToken()
        return super().__call__(config, **kwargs)


def test_a_run_that_outlives_the_stop_is_interrupted_and_its_worker_survives(
    make_settings: Callable[..., ServiceSettings],
) -> None:
    settings = make_settings(max_concurrent=1)
    store = RunStore(settings.db_path)
    manager = RunManager(store, StubbornRun(), settings)
    before = set(threading.enumerate())
    manager.start()
    run_id = manager.submit(SubmitRequest(fixture="paginator", task="t"), submitted_at=1.0)
    while store.get(run_id).status != "RUNNING":  # type: ignore[union-attr]
        time.sleep(0.01)
    manager.stop(grace_s=0.05)
    assert store.get(run_id).status == "INTERRUPTED"  # type: ignore[union-attr]
    store.close()
    # The run ends now, writing to a closed store: no thread exception. Joined, not slept
    # on: a fixed 0.8 s raced the stubborn run's 0.5 s on a loaded machine.
    for worker in set(threading.enumerate()) - before:
        worker.join(10)
    assert set(threading.enumerate()) - before == set(), "the worker ended cleanly"


def test_the_token_bucket_refills_at_its_rate() -> None:
    limiter = RateLimiter(rate_per_second=2.0, burst=2)
    assert limiter.acquire("a", now=0.0) == 0.0
    assert limiter.acquire("a", now=0.0) == 0.0
    assert limiter.acquire("a", now=0.0) == 0.5
    assert limiter.acquire("b", now=0.0) == 0.0, "buckets are per client"
    assert limiter.acquire("a", now=0.5) == 0.0
    assert retry_after_header(0.2) == "1"
    assert retry_after_header(2.1) == "3"


OLD_SCHEMA = """
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    fixture TEXT NOT NULL,
    task TEXT NOT NULL,
    provider TEXT NOT NULL,
    plan_json TEXT,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result_json TEXT
);
CREATE INDEX runs_status ON runs (status);
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
"""The schema of the first release (before strategies, repositories and budgets)."""


def test_a_database_made_by_the_old_schema_opens_and_its_runs_still_read(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    import sqlite3

    from service_harness import wait_finished

    settings = make_settings()
    old = FakeRunFunction()._result(
        RunConfig(task="t", fixture="paginator", run_id="c" * 32), "SUCCEEDED", "ok", [], "d"
    )
    result_json = json.loads(old.model_dump_json())
    for added in ("strategy", "candidates", "node", "environment"):
        result_json.pop(added)  # what an older controller wrote
    db = sqlite3.connect(settings.db_path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO runs (id, status, reason, fixture, task, provider, plan_json, submitted_at,"
        " started_at, finished_at, result_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("c" * 32, "SUCCEEDED", "ok", "paginator", "t", "scripted", None, 1.0, 2.0, 3.0,
         json.dumps(result_json)),
    )  # fmt: skip
    db.execute("INSERT INTO events VALUES (?, 1, ?)", ("c" * 32, '{"event": "run_started"}'))
    db.commit()
    db.close()

    server = start_server(settings, FakeRunFunction())
    with server.client() as client:
        run = client.get(f"/runs/{'c' * 32}").json()
        assert (run["status"], run["fixture_name"], run["diff"]) == ("SUCCEEDED", "paginator", "d")
        assert (run["strategy"], run["repo"], run["budgets"], run["repair"]) == (
            "tools", None, None, None
        )  # fmt: skip
        assert run["allow_no_tests"] is False
        listed = client.get("/runs").json()["runs"]
        assert [(r["id"], r["strategy"]) for r in listed] == [("c" * 32, "tools")]
        assert client.get(f"/runs/{'c' * 32}/trace").text == '{"event": "run_started"}\n'
        new = client.post("/runs", json={"fixture": "paginator", "task": "again"}).json()["id"]
        assert wait_finished(client, new)["budgets"]["max_iterations"] == 20
    columns = [
        row[1] for row in sqlite3.connect(settings.db_path).execute("PRAGMA table_info(runs)")
    ]
    assert columns[-5:] == ["strategy", "repo", "budgets_json", "repair_json", "allow_no_tests"]
