"""The JSONL trace: one event per line, hash-chained, redacted before it is written.

Each line is a JSON object with ``schema``, ``run_id``, ``seq``, ``time`` (UTC ISO 8601),
``event`` and ``prev_sha256``: the SHA-256 (hex) of the previous line's exact bytes
without its newline, 64 zeros for the first line. ``sandbox-agent verify`` walks the chain.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_agent.trace.redact import Redactor

TRACE_SCHEMA = 1
TRACE_FILE = "trace.jsonl"
GENESIS_SHA256 = "0" * 64

EventSink = Callable[[dict[str, Any]], None]


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TraceWriter:
    """Appends redacted, chained events to ``RUN_DIR/trace.jsonl`` and passes each to a sink.

    Safe to share between threads (a run's baseline runs in its own, and writes its
    ``sandbox_run`` event from there): each event takes its ``seq`` and its predecessor's
    hash, is written, becomes the head and reaches the sink under one lock, so lines
    never interleave or share a ``seq``, and the sink sees them in the chain's order.
    """

    def __init__(
        self,
        run_dir: Path,
        run_id: str,
        redactor: Redactor,
        on_event: EventSink | None = None,
    ) -> None:
        """Args:
        run_dir: the run's own folder (created if missing).
        run_id: stamped on every event.
        redactor: applied to every event before it is written or passed on.
        on_event: receives each event, already redacted, right after it is written.
        """
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / TRACE_FILE
        self.run_id = run_id
        self.head_sha256 = GENESIS_SHA256
        """SHA-256 of the last line written: the head of the chain."""
        self._redactor = redactor
        self._on_event = on_event
        self._seq = 0
        self._lock = threading.Lock()
        self._handle = self.path.open("xb")

    def redact_text(self, text: str) -> str:
        """``text`` with every secret this trace redacts replaced (for records kept elsewhere)."""
        return self._redactor.text(text)

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Write one event and return it as written.

        Raises:
            ValueError: the writer is closed.
        """
        redacted = self._redactor.value(fields)
        with self._lock:
            record: dict[str, Any] = {
                "schema": TRACE_SCHEMA,
                "run_id": self.run_id,
                "seq": self._seq,
                "time": _utc_now(),
                "event": event,
                **redacted,
                "prev_sha256": self.head_sha256,
            }
            line = json.dumps(record, ensure_ascii=False, sort_keys=False, default=str).encode()
            self._handle.write(line + b"\n")
            self._handle.flush()
            self.head_sha256 = hashlib.sha256(line).hexdigest()
            self._seq += 1
            if self._on_event is not None:  # in order: a live watcher sees the chain's order
                self._on_event(record)
        return record

    def close(self) -> None:
        """Flush and close the file; later ``emit`` calls raise."""
        with self._lock:
            self._handle.close()


def read_chain(path: Path) -> list[dict[str, Any]]:
    """Read a trace and check its hash chain and sequence numbers.

    Raises:
        ValueError: a line is not JSON, out of sequence, or breaks the chain.
    """
    events: list[dict[str, Any]] = []
    previous = GENESIS_SHA256
    for index, line in enumerate(path.read_bytes().splitlines()):
        event = json.loads(line)
        if event.get("seq") != index or event.get("prev_sha256") != previous:
            raise ValueError(f"trace chain broken at line {index + 1}")
        previous = hashlib.sha256(line).hexdigest()
        events.append(event)
    return events
