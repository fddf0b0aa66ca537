"""What the model is told after each turn, and what the result and the trace record of it.

The model sees the tool's bounded result (it needs file text to work); the trace and
the public result keep summaries only: bulk text becomes its size and digest.
"""

from __future__ import annotations

import json
from typing import Any

from sandbox_agent.controller.models import ToolCallRecord
from sandbox_agent.tools.contracts import ToolOutcome
from sandbox_agent.trace import summarise_value

SYSTEM_PROMPT = (
    "You are a coding agent working on a copy of a Python repository. Each turn, reply with "
    'exactly one JSON object {"tool": NAME, "args": {...}} calling one of the tools listed. '
    "There is no shell. Tests run only through run_tests. Call finish when you are done; the "
    "controller runs the tests itself and decides whether the task succeeded."
)
MAX_SUMMARY_CHARS = 160
EVIDENCE_KEYS = ("status", "exit_code", "tests_run", "failures", "attested", "runtime")


def observation(outcome: ToolOutcome) -> str:
    """The controller's answer to the model, as JSON text."""
    return json.dumps(
        {
            "tool": outcome.tool,
            "ok": outcome.ok,
            "denial": outcome.denial,
            "message": outcome.message,
            "result": outcome.result,
        },
        default=str,
    )


def refusal_observation(code: str, message: str) -> str:
    """The answer to output that was not a valid, allowed tool call."""
    return json.dumps({"ok": False, "denial": code, "message": message})


def one_line(outcome: ToolOutcome) -> str:
    """A short human summary of one tool call, for the table and the result."""
    result = outcome.result
    if outcome.denial:
        text = f"{outcome.denial}: {outcome.message}"
    elif outcome.tool == "run_tests":
        text = (
            f"{result.get('tests_run', '?')} run, {result.get('failures', '?')} failed "
            f"({result.get('status', '?')}, attested={result.get('attested', '?')})"
        )
    else:
        text = outcome.message or "ok"
    text = " ".join(text.split())
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def tool_call_record(outcome: ToolOutcome) -> ToolCallRecord:
    """The public record of one call: evidence fields kept, bulk text summarised."""
    summarised: dict[str, Any] = summarise_value(outcome.result)
    summarised["summary"] = one_line(outcome)
    return ToolCallRecord(
        tool=outcome.tool,
        ok=outcome.ok,
        denial=outcome.denial,
        duration_ms=round(outcome.duration_ms, 3),
        result=summarised,
    )


def arguments_for_trace(args: Any) -> Any:
    """Tool arguments with long text (patch bodies) summarised."""
    return summarise_value(args.model_dump() if hasattr(args, "model_dump") else args)
