"""SQLite record of runs and their trace events: what survives a restart of the server.

One connection shared by the worker threads and the request handlers, serialised by a
lock (SQLite writes are serialised anyway); WAL so readers do not wait on writers.

One server per database: a ``RunStore`` holds an exclusive lock (``flock``) on
``<database>.lock`` while it is open, so a second server on the same file is refused
instead of marking the first one's live runs interrupted (SR-8 S8-3). The kernel drops the
lock with its holder, however it ended. The database and its lock are 0600, and a folder
made for them 0700 (S8-6).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from sandbox_agent.errors import SetupError
from sandbox_agent.service.private import private_dir, private_file, tighten_if_present

MAX_EVENTS_PER_RUN = 10_000
MAX_EVENT_BYTES = 64 * 1024
DEFAULT_BUSY_TIMEOUT_S = 5.0
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class DatabaseInUse(SetupError):
    """Another server (or another ``RunStore``) has this database open."""


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
ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "TEXT"),
    ("repo", "TEXT"),
    ("budgets_json", "TEXT"),
    ("repair_json", "TEXT"),
    ("allow_no_tests", "INTEGER"),
)
"""Columns added to ``runs`` after its first release, in order: a database made before
them gets them (``ALTER TABLE ... ADD COLUMN``, NULL in its old rows) when it is opened."""


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
    strategy: str | None = None
    """None in runs recorded before strategies (they ran the tool loop)."""
    repo: str | None = None
    """The path a ``repo`` request named; None for a fixture."""
    budgets_json: str | None = None
    repair_json: str | None = None
    allow_no_tests: int | None = None
    """1: the request allowed a repository with no tests; 0 or None (older runs): not."""


class StoredEvent(NamedTuple):
    seq: int
    event_json: str


_INSERT = (
    "INSERT INTO runs (id, status, reason, fixture, task, provider, plan_json, submitted_at,"
    " started_at, finished_at, result_json, strategy, repo, budgets_json, repair_json,"
    " allow_no_tests) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = (
    "SELECT id, status, reason, fixture, task, provider, plan_json, submitted_at, started_at,"
    " finished_at, result_json, strategy, repo, budgets_json, repair_json, allow_no_tests"
    " FROM runs"
)


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _lock_exclusively(path: Path) -> int:
    """Open and ``flock`` the database's lock file; return its descriptor.

    Raises:
        DatabaseInUse: another holder has the lock.
    """
    lock = lock_path(path)
    private_file(lock)
    fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        raise DatabaseInUse(
            f"another sandbox-agent serve (pid {holder}) uses the database {path}: "
            "stop it, or give this one another --db"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring a database made by an older server up to the current columns."""
    present = {row[1] for row in db.execute("PRAGMA table_info(runs)").fetchall()}
    for name, kind in ADDED_COLUMNS:
        if name not in present:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")


class RunStore:
    """Runs and their events in one SQLite file, held by this store alone while open."""

    def __init__(self, path: Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        """Open (creating when missing) the database at ``path``, and lock it.

        Raises:
            DatabaseInUse: another server has the database open.
        """
        private_dir(path.parent, tighten=False)
        self._lock_fd = _lock_exclusively(path)
        self._lock = threading.Lock()
        self._closed = False
        self.writes_failing = False
        """True from a failed write to the next one that succeeds (``/health`` reads it)."""
        try:
            private_file(path)
            for suffix in SQLITE_SIDE_FILES:  # SQLite makes them with the database's mode
                tighten_if_present(path.with_name(path.name + suffix))
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            try:
                self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.executescript(_SCHEMA)
                _add_missing_columns(self._db)
            except BaseException:
                self._db.close()
                raise
        except BaseException:
            os.close(self._lock_fd)
            raise

    def close(self) -> None:
        """Close the database and let it go. Later calls read nothing and write nothing: a
        run that outlived the server's stop must not crash its worker thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._db.close()
            os.close(self._lock_fd)

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
            try:
                changed = self._db.execute(sql, params).rowcount
            except sqlite3.Error:
                self.writes_failing = True
                raise
            self.writes_failing = False
            return changed

    def probe_write(self) -> bool:
        """Take the write lock and let it go at once: True when a write could go through now."""
        with self._lock:
            if self._closed:
                return False
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                self.writes_failing = True
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                return False
            self.writes_failing = False
            return True

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
        self._write(
            "UPDATE runs SET status = 'INTERRUPTED', reason = ?, finished_at = ?"
            " WHERE status IN ('QUEUED', 'RUNNING')",
            (reason, time.time()),
        )
        return ids

    def interrupt_queued(self, run_ids: Iterable[str], reason: str) -> None:
        """Mark these runs ``INTERRUPTED`` if they are still queued, in one write."""
        ids = list(run_ids)
        if ids:
            self._write(
                "UPDATE runs SET status = 'INTERRUPTED', reason = ?, finished_at = ?"
                " WHERE status = 'QUEUED' AND id IN (SELECT value FROM json_each(?))",
                (reason, time.time(), json.dumps(ids)),
            )

    def append_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        """Store one trace event; past the per-run or per-event bound, store a marker instead."""
        if seq > MAX_EVENTS_PER_RUN:
            return
        try:
            text = json.dumps(event, ensure_ascii=False, default=str)
            size = len(text.encode())
        except (ValueError, TypeError, RecursionError) as error:
            # A lone surrogate (UnicodeEncodeError), nesting past the recursion limit, a
            # circular value: the event is unstorable, the run is not (SR-8 S8-2).
            text = json.dumps({"event": "event_unstorable", "error": type(error).__name__})
            size = len(text)
        if seq == MAX_EVENTS_PER_RUN:
            text = json.dumps({"event": "events_truncated", "limit": MAX_EVENTS_PER_RUN})
        elif size > MAX_EVENT_BYTES:
            text = json.dumps({"event": "event_too_large", "bytes": size})
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
