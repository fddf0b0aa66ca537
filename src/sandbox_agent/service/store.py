"""SQLite record of runs and their trace events: what survives a restart of the server.

One connection shared by the worker threads and the request handlers, serialised by a
lock (SQLite writes are serialised anyway); WAL so readers do not wait on writers.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

MAX_EVENTS_PER_RUN = 10_000
MAX_EVENT_BYTES = 64 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
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
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


class StoredRun(NamedTuple):
    id: str
    status: str
    reason: str
    fixture: str
    task: str
    provider: str
    plan_json: str | None
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    result_json: str | None


class StoredEvent(NamedTuple):
    seq: int
    event_json: str


_INSERT = (
    "INSERT INTO runs (id, status, reason, fixture, task, provider, plan_json, submitted_at,"
    " started_at, finished_at, result_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = (
    "SELECT id, status, reason, fixture, task, provider, plan_json, submitted_at, started_at,"
    " finished_at, result_json FROM runs"
)


class RunStore:
    """Runs and their events in one SQLite file."""

    def __init__(self, path: Path) -> None:
        """Open (creating when missing) the database at ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._closed = False
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database. Later calls read nothing and write nothing: a run that
        outlived the server's stop grace period must not crash its worker thread."""
        with self._lock:
            self._closed = True
            self._db.close()

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            if self._closed:
                return None
            row: tuple[Any, ...] | None = self._db.execute(sql, params).fetchone()
        return row

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._lock:
            if self._closed:
                return 0
            return self._db.execute(sql, params).rowcount

    def insert(self, run: StoredRun) -> None:
        self._write(_INSERT, tuple(run))

    def get(self, run_id: str) -> StoredRun | None:
        row = self._one(_SELECT + " WHERE id = ?", (run_id,))
        return StoredRun(*row) if row else None

    def page(self, *, limit: int, offset: int = 0) -> tuple[list[StoredRun], int]:
        """Newest first, with the total count."""
        with self._lock:
            if self._closed:
                return [], 0
            rows = self._db.execute(
                _SELECT + " ORDER BY seq DESC LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
            total = self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return [StoredRun(*row) for row in rows], int(total)

    def mark_running(self, run_id: str) -> bool:
        """QUEUED -> RUNNING; False when the run is no longer queued (cancelled meanwhile)."""
        changed = self._write(
            "UPDATE runs SET status = 'RUNNING', started_at = ? WHERE id = ? AND status = 'QUEUED'",
            (time.time(), run_id),
        )
        return changed == 1

    def finish(self, run_id: str, status: str, reason: str, result_json: str | None = None) -> bool:
        """Record a terminal status once; False when the run had already finished."""
        changed = self._write(
            "UPDATE runs SET status = ?, reason = ?, result_json = ?, finished_at = ?"
            " WHERE id = ? AND status IN ('QUEUED', 'RUNNING')",
            (status, reason, result_json, time.time(), run_id),
        )
        return changed == 1

    def interrupt_in_flight(self, reason: str) -> list[str]:
        """Mark every queued or running run ``INTERRUPTED``; return their ids."""
        with self._lock:
            if self._closed:
                return []
            ids = [
                row[0]
                for row in self._db.execute(
                    "SELECT id FROM runs WHERE status IN ('QUEUED', 'RUNNING')"
                ).fetchall()
            ]
            self._db.execute(
                "UPDATE runs SET status = 'INTERRUPTED', reason = ?, finished_at = ?"
                " WHERE status IN ('QUEUED', 'RUNNING')",
                (reason, time.time()),
            )
        return ids

    def append_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        """Store one trace event; past the per-run or per-event bound, store a marker instead."""
        if seq > MAX_EVENTS_PER_RUN:
            return
        text = json.dumps(event, ensure_ascii=False, default=str)
        if seq == MAX_EVENTS_PER_RUN:
            text = json.dumps({"event": "events_truncated", "limit": MAX_EVENTS_PER_RUN})
        elif len(text.encode()) > MAX_EVENT_BYTES:
            text = json.dumps({"event": "event_too_large", "bytes": len(text.encode())})
        self._write(
            "INSERT OR IGNORE INTO events (run_id, seq, event_json) VALUES (?, ?, ?)",
            (run_id, seq, text),
        )

    def events_after(self, run_id: str, after: int, limit: int = 500) -> list[StoredEvent]:
        with self._lock:
            if self._closed:
                return []
            rows = self._db.execute(
                "SELECT seq, event_json FROM events WHERE run_id = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
        return [StoredEvent(*row) for row in rows]
