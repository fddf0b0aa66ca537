"""Server-sent events of a run's trace: replay from the start (or ``Last-Event-ID``), then live.

The stream reads the store, not memory, so it works the same for a finished run, a run
that is live, and a run recorded by an earlier server. It ends when the run has ended
and every event has been sent, with one ``end`` event carrying the final status.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from sandbox_agent.service.models import IN_FLIGHT
from sandbox_agent.service.store import RunStore

POLL_INTERVAL_S = 0.2
KEEPALIVE_S = 15.0


def _frame(event: str, data: str, event_id: int | None = None) -> str:
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines.append(f"event: {event}")
    # Split at "\n" only: an SSE line ends at CR or LF, and JSON text holds neither raw,
    # while str.splitlines would also break at U+2028, U+0085 and the like, which JSON
    # keeps raw inside strings, and so corrupt the event a client reassembles.
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return "\n".join(lines) + "\n\n"


async def trace_stream(store: RunStore, run_id: str, after: int = 0) -> AsyncIterator[str]:
    """Yield SSE frames: ``trace`` events (id = event number), then one ``end`` event."""
    last = after
    idle = 0.0
    while True:
        # Read the status before the events: a run that ends between the two reads
        # is seen as live once more, so its last events are never skipped.
        stored = await asyncio.to_thread(store.get, run_id)
        events = await asyncio.to_thread(store.events_after, run_id, last)
        for event in events:
            last = event.seq
            yield _frame("trace", event.event_json, event.seq)
        if events:
            idle = 0.0
            continue
        if stored is None or stored.status not in IN_FLIGHT:
            status = stored.status if stored else "UNKNOWN"
            reason = stored.reason if stored else ""
            yield _frame("end", json.dumps({"status": status, "reason": reason}))
            return
        await asyncio.sleep(POLL_INTERVAL_S)
        idle += POLL_INTERVAL_S
        if idle >= KEEPALIVE_S:
            idle = 0.0
            yield ": keep-alive\n\n"
