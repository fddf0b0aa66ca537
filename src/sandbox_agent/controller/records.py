"""What the model is told after each turn, and what the result and the trace record of it.

The model sees the tool's bounded result (it needs file text to work); the trace and
the public result keep summaries only: bulk text becomes its size and digest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sandbox_agent.controller.models import ToolCallRecord
from sandbox_agent.tools.contracts import ToolOutcome
from sandbox_agent.trace import summarise_value

SYSTEM_PROMPT = (
    "You are a coding agent working on a copy of a Python repository. Each turn, reply with "
    'exactly one JSON object {"tool": NAME, "args": {...}} calling one of the tools listed. '
    "There is no shell. Tests run only through run_tests. Work in small steps: read the "
    "files the task is about, change the code with apply_patch (copy its old text exactly "
    "from the file), run every test with run_tests (no selector), and call finish when they "
    "pass; the controller runs the tests itself and decides whether the task succeeded."
)
"""Generic: no task, fixture or benchmark is named. The workflow sentence was added on
HumanEvalFix's even-numbered rows (the development split), after the local model ran one
invented test and finished (docs/EVALS.md, "Development split")."""
MAX_FILES_WITH_TASK = 100
"""The repository's files shown with the task, at most (``task_message``)."""
MAX_SUMMARY_CHARS = 160
EVIDENCE_KEYS = ("status", "exit_code", "tests_run", "failures", "attested", "runtime")


def task_message(task: str, files: list[str], truncated: bool) -> str:
    """The task as the model reads it: the user's text, then the repository's files (the
    controller's own listing, not a tool call), so a model starts from paths that exist."""
    more = f"\n(only the first {len(files)}; list_files shows a folder's)" if truncated else ""
    listing = "\n".join(files) if files else "(no files)"
    return f"{task}\n\nFiles in the repository:\n{listing}{more}"


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


def _same(text: str) -> str:
    return text


def one_line(outcome: ToolOutcome, redact: Callable[[str], str] = _same) -> str:
    """A short human summary of one tool call, for the table and the result; ``redact``
    runs before the cut (a secret cut in two is no longer recognisable)."""
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
    text = redact(" ".join(text.split()))
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def tool_call_record(outcome: ToolOutcome, redact: Callable[[str], str] = _same) -> ToolCallRecord:
    """The public record of one call: evidence fields kept, bulk text summarised, every
    string passed through ``redact`` (the record goes to ``result.json``)."""
    summarised: dict[str, Any] = _redact_strings(summarise_value(outcome.result), redact)
    summarised["summary"] = one_line(outcome, redact)
    return ToolCallRecord(
        tool=outcome.tool,
        ok=outcome.ok,
        denial=outcome.denial,
        duration_ms=round(outcome.duration_ms, 3),
        result=summarised,
    )


def _redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(key)): _redact_strings(item, redact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_strings(item, redact) for item in value]
    return value


def arguments_for_trace(args: Any) -> Any:
    """Tool arguments with long text (patch bodies) summarised."""
    return summarise_value(args.model_dump() if hasattr(args, "model_dump") else args)
