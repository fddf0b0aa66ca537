"""A deterministic run function for the service's tests (no Docker, no model): a test double.

It has ``run_task``'s signature, emits trace events as a run would (one of them a
denial, one a sandbox test run with its evidence), honours the ``CancelToken``, and
records how many runs it executed at once.
"""

from __future__ import annotations

import threading
from typing import Any

from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.one_run import EventSink

FAKE_DIFF = """\
--- a/paginator/core.py
+++ b/paginator/core.py
@@ -1,3 +1,3 @@
 def page_count(total, size):
-    return total // size
+    return -(-total // size)
"""
HOSTILE_SUMMARY = 'fixed it <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script>'
"""Model output carrying markup: a page that renders it as HTML is broken."""
FAKE_SHA = "0" * 64


def _calls() -> list[ToolCallRecord]:
    evidence = {
        "status": "completed",
        "exit_code": 0,
        "tests_run": 3,
        "failures": 0,
        "attested": True,
        "runtime": "runc",
    }
    return [
        ToolCallRecord(tool="read_file", ok=True, denial=None, duration_ms=1.5,
                       result={"path": "paginator/core.py", "lines": 3}),
        ToolCallRecord(tool="apply_patch", ok=False, denial="path.protected", duration_ms=0.4,
                       result={"message": "tests/test_core.py is protected"}),
        ToolCallRecord(tool="apply_patch", ok=True, denial=None, duration_ms=2.0,
                       result={"files": ["paginator/core.py"]}),
        ToolCallRecord(tool="run_tests", ok=True, denial=None, duration_ms=180.0,
                       result=evidence),
        ToolCallRecord(tool="finish", ok=True, denial=None, duration_ms=0.1,
                       result={"summary": HOSTILE_SUMMARY}),
    ]  # fmt: skip


class FakeRunFunction:
    """Call it like ``run_task``. Each run takes ``seconds`` (split across its tool calls)."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.calls: list[RunConfig] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def __call__(
        self,
        config: RunConfig,
        *,
        cancel: CancelToken | None = None,
        on_event: EventSink | None = None,
        **_: Any,
    ) -> RunResult:
        cancel = cancel or CancelToken()
        emit = on_event or (lambda event: None)
        with self._lock:
            self.calls.append(config)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            return self._run(config, cancel, emit)
        finally:
            with self._lock:
                self.active -= 1

    def _run(self, config: RunConfig, cancel: CancelToken, emit: EventSink) -> RunResult:
        calls = _calls()
        emit({"event": "run_started", "run_id": config.run_id, "task": config.task})
        done: list[ToolCallRecord] = []
        for step, call in enumerate(calls, start=1):
            if cancel.wait(self.seconds / len(calls)):
                return self._result(config, "CANCELLED", "cancelled by the user", done, "")
            done.append(call)
            emit({"event": "tool_call", "step": step, **call.model_dump()})
        emit({"event": "run_finished", "status": "SUCCEEDED"})
        return self._result(config, "SUCCEEDED", "final tests passed", done, FAKE_DIFF)

    @staticmethod
    def _result(
        config: RunConfig, status: str, reason: str, calls: list[ToolCallRecord], diff: str
    ) -> RunResult:
        passed = status == "SUCCEEDED"
        return RunResult.model_validate(
            {
                "run_id": config.run_id or "fake",
                "status": status,
                "reason": reason,
                "diff": diff,
                "files_changed": ["paginator/core.py"] if diff else [],
                "final_tests": FinalTests(passed=passed, tests_run=3, failures=0,
                                          status="completed") if passed else None,
                "budget_used": BudgetUsed(iterations=len(calls), tool_calls=len(calls),
                                          policy_denials=sum(not c.ok for c in calls)),
                "fixture": FixtureIntegrity(intact=True, sha256_before=FAKE_SHA,
                                            sha256_after=FAKE_SHA),
                "trace_path": "",
                "tool_calls": calls,
                "provider": config.provider,
                "model_summary": HOSTILE_SUMMARY if passed else None,
            }
        )  # fmt: skip
