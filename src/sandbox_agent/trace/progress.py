"""A run's progress in lines a person reads, made from its trace events (issue 30).

The same events the trace keeps and the service streams (``run_task``'s ``on_event``):
one line per turn (its number, the tool, the gist of its argument, the outcome, the
model's and the tool's seconds, the tokens), one per retry, candidate, final test run
and end; and, between events, what the run is waiting for (``ProgressLines.waiting``).

Events are redacted already; every string from a run (paths, patterns, messages) is
still hostile to a terminal, so control and format characters become ``?`` and each
piece is cut short.
"""

from __future__ import annotations

from typing import Any

from sandbox_agent.printable import printable

GIST_CHARS = 60
OUTCOME_CHARS = 80


def safe(value: object, limit: int = GIST_CHARS) -> str:
    """``value`` as text a terminal shows as it is: no escapes, one line, at most ``limit``."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = printable(" ".join(text.split()), keep="")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def gist(tool: str, arguments: object) -> str:
    """The part of a call's arguments that says what it is about."""
    args = _dict(arguments)
    if tool == "list_files":
        return safe(args.get("path") or ".")
    if tool == "read_file":
        start, end = args.get("start_line"), args.get("end_line")
        lines = f":{start or 1}-{end or ''}" if start or end else ""
        return safe(f"{args.get('path', '?')}{lines}")
    if tool == "search":
        where = f" in {args['path']}" if isinstance(args.get("path"), str) and args["path"] else ""
        return safe(f"{safe(args.get('pattern'), 40)!r}{where}")
    if tool == "apply_patch":
        edits = [e for e in args.get("edits") or [] if isinstance(e, dict)]
        paths = list(dict.fromkeys(str(e.get("path", "?")) for e in edits))
        return safe(f"{', '.join(paths) or '?'} ({len(edits)} edit{'s' * (len(edits) != 1)})")
    if tool == "run_tests":
        return safe(args.get("selector") or "all tests")
    if tool == "finish":
        summary = args.get("summary")
        return repr(safe(summary, 50)) if isinstance(summary, str) else ""
    return ""


def error_line(error: object) -> str:
    """A ``provider_error`` record as one line (``ProviderError.line``'s form)."""
    record = _dict(error)
    message = safe(record.get("message"), 200)
    if record.get("kind") == "http_status" and isinstance(record.get("http_status"), int):
        kind = f" {safe(record['type'])}" if record.get("type") else ""
        head = f"HTTP {record['http_status']}{kind}"
        return f"{head}: {message}" if message else head
    return message or safe(record.get("kind", "failed"))


class ProgressLines:
    """Trace events in, progress lines out; keeps what it needs between events."""

    def __init__(self) -> None:
        self._turn: dict[str, Any] | None = None
        """The model turn whose call has not come yet."""
        self._turns = 0
        self._waiting: str | None = None

    def waiting(self) -> str | None:
        """What the run waits for now, as a short phrase; None when it is over."""
        return self._waiting

    def lines(self, event: dict[str, Any]) -> list[str]:
        """The lines ``event`` adds (often one, sometimes none)."""
        name = event.get("event")
        handler = getattr(self, f"_on_{name}", None) if isinstance(name, str) else None
        out: list[str] = []
        if self._turn is not None and name not in ("tool_call", "invalid_output", "sandbox_run"):
            out.append(self._unanswered())
        if handler is not None:
            out.extend(handler(event))
        return out

    def _next_model_turn(self) -> str:
        return f"turn {self._turns + 1}: waiting for the model"

    def _timing(self, tool_ms: object = None) -> str:
        turn = self._turn or {}
        usage = _dict(turn.get("usage"))
        parts = [f"model {_number(turn.get('duration_ms')) / 1000:.1f} s"]
        if tool_ms is not None:
            parts.append(f"tool {_number(tool_ms) / 1000:.1f} s")
        tokens = int(_number(usage.get("input_tokens")) + _number(usage.get("output_tokens")))
        if tokens:
            parts.append(f"{tokens:,} tokens")
        return "(" + ", ".join(parts) + ")"

    def _unanswered(self) -> str:
        line = f"turn {self._turns}: the model's reply was not acted on {self._timing()}"
        self._turn = None
        return line

    def _on_run_started(self, event: dict[str, Any]) -> list[str]:
        budgets = _dict(event.get("budgets"))
        self._waiting = self._next_model_turn()
        return [
            f"run {safe(event.get('run_id'))}: {safe(event.get('source'))}, provider "
            f"{safe(event.get('provider'))}, {safe(event.get('runner'))} on "
            f"{safe(event.get('runtime'))}; at most {int(_number(budgets.get('max_iterations')))} "
            f"turns, {_number(budgets.get('max_wall_seconds')):g} s"
        ]

    def _on_model_turn(self, event: dict[str, Any]) -> list[str]:
        self._turns = int(_number(event.get("iteration"))) or self._turns + 1
        if event.get("mode") == "text":  # the repair strategy: a reply is code, not a call
            self._turn = event
            line = f"  model reply {self._turns} {self._timing()}"
            self._turn = None
            self._waiting = "checking the reply"
            return [line]
        self._turn = event
        self._waiting = f"turn {self._turns}: running the call"
        return []

    def _on_tool_call(self, event: dict[str, Any]) -> list[str]:
        tool = safe(event.get("tool"), 30)
        what = gist(tool, event.get("arguments"))
        if event.get("denial"):
            outcome = f"refused ({safe(event.get('denial'), 40)})"
        elif tool == "finish" and event.get("held"):
            outcome = "held: the tests still fail"
        elif tool == "finish":
            outcome = "finished"
        else:
            outcome = safe(_dict(event.get("outcome")).get("summary") or "ok", OUTCOME_CHARS)
        call = " ".join(part for part in (tool, what) if part)
        if event.get("by") == "controller":
            self._waiting = "working"
            seconds = _number(event.get("duration_ms")) / 1000
            return [f"  {call}: {outcome} (tool {seconds:.1f} s)"]
        line = f"turn {self._turns}: {call} -> {outcome} {self._timing(event.get('duration_ms'))}"
        self._turn = None
        ended = tool == "finish" and not event.get("held")
        self._waiting = "final test run" if ended else self._next_model_turn()
        return [line]

    def _on_invalid_output(self, event: dict[str, Any]) -> list[str]:
        line = (
            f"turn {self._turns}: invalid output ({safe(event.get('denial'), 40)}: "
            f"{safe(event.get('message'))}) {self._timing()}"
        )
        self._turn = None
        self._waiting = self._next_model_turn()
        return [line]

    def _on_provider_retry(self, event: dict[str, Any]) -> list[str]:
        self._waiting = "retrying the model request"
        return [
            f"  model request failed: {error_line(event.get('provider_error'))}; retry "
            f"{int(_number(event.get('attempt')))} of {int(_number(event.get('retries')))} in "
            f"{_number(event.get('wait_seconds')):.1f} s"
        ]

    def _on_usage_anomaly(self, event: dict[str, Any]) -> list[str]:
        reported, reserved = _dict(event.get("reported")), _dict(event.get("reserved"))

        def tokens(counts: dict[str, Any]) -> str:
            return (
                f"{int(_number(counts.get('input_tokens'))):,} in, "
                f"{int(_number(counts.get('output_tokens'))):,} out"
            )

        return [
            f"  model usage reported past the request's worst case ({tokens(reported)}): "
            f"booked at the worst case ({tokens(reserved)})"
        ]

    def _on_provider_error(self, event: dict[str, Any]) -> list[str]:
        self._waiting = "final test run"
        return [f"  model request failed: {error_line(event.get('provider_error'))}"]

    def _on_request_stopped(self, event: dict[str, Any]) -> list[str]:
        why = "the run was cancelled" if event.get("why") == "cancelled" else "wall clock ran out"
        self._waiting = "sealing the run"
        return [f"  model request stopped: {why}"]

    def _on_candidate(self, event: dict[str, Any]) -> list[str]:
        tests = ""
        if isinstance(event.get("tests_run"), int):
            tests = f", {event['tests_run']} run, {int(_number(event.get('failures')))} failed"
        focus = f", for {safe(event['focus'], 80)}" if isinstance(event.get("focus"), str) else ""
        self._waiting = "working"
        return [
            f"  candidate {int(_number(event.get('index')))} (round "
            f"{int(_number(event.get('round')))}, t={_number(event.get('temperature')):g}"
            f"{focus}): {safe(event.get('outcome'), 20)}{tests}: {safe(event.get('reason'))}"
        ]

    def _on_tool_error(self, event: dict[str, Any]) -> list[str]:
        error = _dict(event.get("error"))
        return [f"  {safe(event.get('tool'), 30)} failed on our side: {safe(error.get('type'))}"]

    def _on_infrastructure_error(self, event: dict[str, Any]) -> list[str]:
        return [f"  our side failed: {safe(_dict(event.get('error')).get('type'))}"]

    def _on_final_tests(self, event: dict[str, Any]) -> list[str]:
        verdict = "PASSED" if event.get("passed") is True else "FAILED"
        reused = ", the last run_tests reused" if event.get("reused") is True else ""
        self._waiting = "sealing the run"
        failures = int(_number(event.get("failures")))
        return [
            f"final tests: {verdict}, {int(_number(event.get('tests_run')))} run, "
            f"{failures} failed ({safe(event.get('status'), 20)}{reused})"
        ]

    def _on_run_finished(self, event: dict[str, Any]) -> list[str]:
        self._waiting = None
        status = safe(event.get("status"), 20) or "stopped"
        seconds = _number(event.get("wall_seconds"))
        wall = f" in {seconds:.1f} s" if seconds else ""
        return [f"finished: {status} ({safe(event.get('reason'), 200)}){wall}"]
