"""The runner report: one JSON object the trusted runner wrapper writes to fd 3.

It is read from its own pipe, never from the workload's stdout, and accepted only in
its exact shape. Two objects on the pipe (test code writing its own before the
wrapper's) are not one object and are refused.
"""

from __future__ import annotations

from sandbox_supervisor import fastjson, protocol

TYPE_CHECKING = False  # typing is not imported at run time: PID 1 start-up (issue 3)
if TYPE_CHECKING:
    from typing import Any

RUNNERS = ("unittest", "pytest", "judge")
"""``judge``: a held-out check judged out of process (``sandbox_supervisor.judge``)."""
COUNT_KEYS = ("tests_run", "failures", "errors", "skipped")
MAX_COUNT = 10**9
"""No count is larger: test code can write a report of its own on the runner's pipe (the
SR-2 residual), and a count of 4300 digits passed here and later failed to format on
the host (issue 20, SR-8)."""
REPORT_KEYS = frozenset({"runner", *COUNT_KEYS})


def parse_runner_report(data: bytes, *, overflow: bool) -> tuple[dict[str, Any] | None, str | None]:
    """``(report, None)`` for a well-formed report, else ``(None, why)``."""
    if overflow:
        return None, f"runner report exceeds {protocol.MAX_RUNNER_REPORT_BYTES} bytes"
    if not data:
        return None, "no runner report on fd 3"
    try:
        value = fastjson.loads(data.decode("utf-8"))
    except (ValueError, RecursionError, MemoryError) as error:
        # Workload bytes: nested past the parser's recursion limit, or digits past
        # Python's, must never raise out of PID 1 (it exited 126 with no exit record).
        return None, f"runner report is not one JSON object: {type(error).__name__}"[:300]
    if not isinstance(value, dict) or value.keys() != REPORT_KEYS:
        return None, f"runner report must have exactly the keys {sorted(REPORT_KEYS)}"
    if value["runner"] not in RUNNERS:
        return None, f"runner report: runner must be one of {list(RUNNERS)}"
    for key in COUNT_KEYS:
        count = value[key]
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
            return None, f"runner report: {key} must be an integer from 0 to {MAX_COUNT}"
    return value, None
