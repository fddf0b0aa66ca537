"""The runner report: one JSON object the trusted runner wrapper writes to fd 3.

It is read from its own pipe, never from the workload's stdout, and accepted only in
one of its exact shapes:

- the counts: ``runner``, ``tests_run``, ``failures``, ``errors``, ``skipped`` (a
  held-out check's judge writes these, and only it);
- the counts and the test ids (``unittest`` and ``pytest``, always): also ``mode`` (``run``: the
  ids of the tests that ran; ``collect``: of those collected, nothing run), ``ids`` (a
  list of strings, or null when the suite had more than the report holds), ``broken``
  (what could not be collected: module names or collector node ids) and ``skipped_ids``
  (those of ``ids`` that were skipped or expected to fail; null with ``ids``).

The host compares the final run's ids with those of a collect-only run of the original
tree (issue 20, SR-8 C8-1), and its skipped ids with those the original skips (SR-13 F1:
code under test that raises a skip turns its failing test into one). Two objects on the
pipe (test code writing its own before the wrapper's) are not one object and are
refused. Every number and list is bounded.
"""

from __future__ import annotations

import os
import stat
import sys

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
MODES = ("run", "collect")
ID_REPORT_KEYS = REPORT_KEYS | {"mode", "ids", "broken", "skipped_ids"}
MAX_TEST_IDS = 100_000
"""Test ids (and broken collectors) in one report, at most."""
MAX_TEST_ID_CHARS = 2000
"""A longer id is shortened by the wrapper, the same way on every run (``short_id``)."""


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
    if not isinstance(value, dict) or value.keys() not in (REPORT_KEYS, ID_REPORT_KEYS):
        return None, f"runner report must have exactly the keys {sorted(REPORT_KEYS)} (+ ids)"
    if value["runner"] not in RUNNERS:
        return None, f"runner report: runner must be one of {list(RUNNERS)}"
    if (value["runner"] == "judge") != (value.keys() == REPORT_KEYS):
        # The trusted wrapper always reports ids; only a forgery leaves them out.
        return None, "runner report: ids are required from unittest and pytest, not a judge"
    for key in COUNT_KEYS:
        count = value[key]
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
            return None, f"runner report: {key} must be an integer from 0 to {MAX_COUNT}"
    if value.keys() == ID_REPORT_KEYS:
        why = _check_ids(value)
        if why is not None:
            return None, f"runner report: {why}"
    if len(protocol.canonical_json(value)) > protocol.MAX_RUNNER_REPORT_BYTES:
        # The exit report re-encodes it (ASCII only): it must still fit its frame.
        return None, f"runner report exceeds {protocol.MAX_RUNNER_REPORT_BYTES} bytes encoded"
    return value, None


def _check_ids(value: dict[str, Any]) -> str | None:
    if value["mode"] not in MODES:
        return f"mode must be one of {list(MODES)}"
    for key in ("ids", "broken", "skipped_ids"):
        items = value[key]
        if items is None and key != "broken":
            continue
        if not isinstance(items, list) or len(items) > MAX_TEST_IDS:
            return f"{key} must be a list of at most {MAX_TEST_IDS} strings"
        for item in items:
            if not isinstance(item, str) or not 0 < len(item) <= MAX_TEST_ID_CHARS:
                return f"each of {key} must be a string of 1 to {MAX_TEST_ID_CHARS} characters"
    if (value["ids"] is None) != (value["skipped_ids"] is None):
        return "skipped_ids must be null exactly when ids is"
    return None


def write_report(fd: int | None, counts: dict[str, Any]) -> None:
    """The report as one JSON object on ``fd``, when that is the report pipe."""
    if fd is None:
        return
    import json  # the runner's only: PID 1 parses with ``fastjson`` and never imports it

    data = json.dumps(counts, sort_keys=True).encode()
    too_many = max(len(counts.get("ids") or ()), len(counts.get("broken") or ())) > MAX_TEST_IDS
    if too_many or len(data) > protocol.MAX_RUNNER_REPORT_BYTES:
        # More ids than the report holds: none, and the host cannot compare (it says so).
        counts = {**counts, "ids": None, "broken": [], "skipped_ids": None}
        data = json.dumps(counts, sort_keys=True).encode()
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as error:
        print(f"run_tests: cannot write the runner report: {error}", file=sys.stderr)


def take_report_fd() -> int | None:
    """Move the report pipe off fd 3 (not inherited by the tests' own subprocesses)."""
    try:
        if not stat.S_ISFIFO(os.fstat(protocol.RUNNER_REPORT_FD).st_mode):
            return None
    except OSError:
        return None
    fd = os.dup(protocol.RUNNER_REPORT_FD)
    os.close(protocol.RUNNER_REPORT_FD)
    return fd
