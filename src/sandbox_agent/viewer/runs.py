"""What the page is sent about runs and evaluations read from a folder.

Files are parsed strictly (``verify``'s JSON: no duplicate keys, no NaN) and checked
against the project's own contracts (``RunResult``, ``EvalReport``); anything else is
one line in ``problems``, shown on the page, never a crash and never a guess. Trace
events are passed as they are (the page reads only the fields it knows, as text).
"""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, ValidationError

from sandbox_agent.controller.models import RunResult
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.records import TRACES_DIR
from sandbox_agent.evals.results.report import EvalReport
from sandbox_agent.evidence import VerifyReport
from sandbox_agent.evidence.verify import strict_json
from sandbox_agent.viewer.folder import (
    DIFF_FILE,
    REPORT_FILE,
    RESULT_FILE,
    TRACE_FILE,
    Folder,
    key_of,
)
from sandbox_agent.viewer.settings import HEAD_BYTES
from sandbox_agent.viewer.verdict import folder_verdict

MAX_PROBLEM_CHARS = 300
EVAL_TRACES = TRACES_DIR


class RunListing(BaseModel):
    """One line of the run list."""

    model_config = ConfigDict(extra="forbid")

    key: str
    run_id: str | None = None
    status: str | None = None
    reason: str = ""
    task: str | None = None
    provider: str | None = None
    model: str | None = None
    source: str | None = None
    started: str | None = None
    """The ``time`` of the trace's first event (UTC ISO 8601)."""
    wall_seconds: float | None = None
    budget_used: dict[str, Any] | None = None
    problems: list[str] = []


class RunEvaluation(BaseModel):
    """The evaluation a run folder belongs to (``<results>/traces/<run>``), when it does."""

    model_config = ConfigDict(extra="forbid")

    key: str
    task_id: str
    repeat: int
    status: str
    passed: bool
    clean: bool
    heldout: dict[str, Any] | None
    """``{passed, judge}``: the held-out verdict and who judged it."""


class RunPage(BaseModel):
    """Everything the page shows of one run."""

    model_config = ConfigDict(extra="forbid")

    key: str
    result: dict[str, Any] | None
    """``result.json`` as the run wrote it, once it validates as a ``RunResult``."""
    events: list[dict[str, Any]]
    events_total: int
    """Lines in the trace; ``events`` holds the first ``max_events`` of them."""
    diff: str
    verdict: VerifyReport
    problems: list[str]
    evaluation: RunEvaluation | None = None


class EvalListing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    suite: str | None = None
    provider: str | None = None
    model: str | None = None
    started_at: str | None = None
    summary: dict[str, Any] | None = None
    problems: list[str] = []


class EvalPage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    report: dict[str, Any] | None
    """``report.json`` once it validates as an ``EvalReport``."""
    run_keys: list[str | None]
    """For each run record, the key of its run folder under ``traces/`` (None: not here)."""
    problems: list[str]


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_PROBLEM_CHARS else line[: MAX_PROBLEM_CHARS - 3] + "..."


def _invalid(name: str, error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    return _one_line(f"{name} does not hold what the project writes: {where}: {first['msg']}")


def _read_json(
    folder: Folder, parts: tuple[str, ...], name: str, problems: list[str]
) -> Any | None:
    shown = "/".join((*parts, name))
    try:
        data = folder.read(parts, name)
    except UsageError as error:
        problems.append(_one_line(str(error)))
        return None
    if data is None:
        problems.append(f"{shown} is missing")
        return None
    try:
        return strict_json(data)
    except (ValueError, UnicodeDecodeError) as error:
        problems.append(_one_line(f"{shown} is not JSON ({error})"))
        return None


def _result(folder: Folder, parts: tuple[str, ...], problems: list[str]) -> dict[str, Any] | None:
    raw = _read_json(folder, parts, RESULT_FILE, problems)
    if raw is None:
        return None
    try:
        RunResult.model_validate(raw)
    except ValidationError as error:
        problems.append(_invalid("/".join((*parts, RESULT_FILE)), error))
        return None
    result: dict[str, Any] = raw
    return result


def _first_event(folder: Folder, parts: tuple[str, ...]) -> dict[str, Any] | None:
    try:
        head = folder.read(parts, TRACE_FILE, limit=HEAD_BYTES)
    except UsageError:
        return None
    if not head:
        return None
    try:
        event = json.loads(head.split(b"\n", 1)[0])
    except (ValueError, RecursionError):  # nested past the parser's limit
        return None
    return event if isinstance(event, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def list_run(folder: Folder, parts: tuple[str, ...]) -> RunListing:
    """The run list's line for the run folder ``parts``."""
    problems: list[str] = []
    result = _result(folder, parts, problems)
    first = _first_event(folder, parts) or {}
    if result is None:
        problems = [p for p in problems if not p.endswith(" is missing")] or [
            f"{RESULT_FILE} is missing: the run is still going, or stopped before its end"
        ]
        return RunListing(
            key=key_of(parts),
            run_id=_text(first.get("run_id")),
            task=_text(first.get("task")),
            provider=_text(first.get("provider")),
            source=_text(first.get("source")),
            started=_text(first.get("time")),
            problems=problems,
        )
    budget = result["budget_used"]
    return RunListing(
        key=key_of(parts),
        run_id=result["run_id"],
        status=result["status"],
        reason=result["reason"],
        task=_text(first.get("task")),
        provider=result.get("provider") or _text(first.get("provider")),
        model=result.get("model"),
        source=_text(first.get("source")),
        started=_text(first.get("time")),
        wall_seconds=budget.get("wall_seconds"),
        budget_used=budget,
        problems=problems,
    )


def _events(data: bytes, max_events: int) -> tuple[list[dict[str, Any]], int]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines[:max_events], start=1):
        try:
            event = json.loads(line)
        except ValueError as error:
            event = {"event": "unreadable_line", "line": number, "why": _one_line(str(error))}
        if not isinstance(event, dict):
            event = {"event": "unreadable_line", "line": number, "why": "not a JSON object"}
        events.append(event)
    return events, len(lines)


def load_run(
    folder: Folder, parts: tuple[str, ...], public_key: Ed25519PublicKey | None
) -> RunPage:
    """Everything the page shows of the run folder ``parts``."""
    problems: list[str] = []
    result = _result(folder, parts, problems)
    events: list[dict[str, Any]] = []
    total = 0
    try:
        trace = folder.read(parts, TRACE_FILE)
    except UsageError as error:
        problems.append(_one_line(str(error)))
        trace = None
    if trace is None:
        problems.append(f"{'/'.join((*parts, TRACE_FILE))} is missing")
    else:
        events, total = _events(trace, folder.settings.max_events)
    if total > len(events):
        problems.append(
            f"the trace has {total} events; the first {len(events)} are shown (--max-events)"
        )
    try:
        diff_bytes = folder.read(parts, DIFF_FILE)
    except UsageError as error:
        problems.append(_one_line(str(error)))
        diff_bytes = None
    diff = diff_bytes.decode("utf-8", "replace") if diff_bytes is not None else ""
    if diff_bytes is None and result is not None:
        diff = str(result.get("diff") or "")
    return RunPage(
        key=key_of(parts),
        result=result,
        events=events,
        events_total=total,
        diff=diff,
        verdict=folder_verdict(folder, parts, public_key),
        problems=problems,
        evaluation=_evaluation_of(folder, parts),
    )


def _evaluation_of(folder: Folder, parts: tuple[str, ...]) -> RunEvaluation | None:
    """The record of this run in the report of the results folder it sits in, if any."""
    if len(parts) < 2 or parts[-2] != EVAL_TRACES:
        return None
    eval_parts = parts[:-2]
    try:
        if folder.kind(eval_parts) != "eval":
            return None
    except UsageError:
        return None
    report = _report(folder, eval_parts, [])
    for record in (report or {}).get("runs", []):
        if run_folder_name(str(record.get("trace_path", ""))) == parts[-1]:
            return RunEvaluation(
                key=key_of(eval_parts),
                task_id=record["task_id"],
                repeat=record["repeat"],
                status=record["status"],
                passed=record["passed"],
                clean=record["clean"],
                heldout=record.get("heldout") or None,
            )
    return None


def _report(folder: Folder, parts: tuple[str, ...], problems: list[str]) -> dict[str, Any] | None:
    raw = _read_json(folder, parts, REPORT_FILE, problems)
    if raw is None:
        return None
    try:
        EvalReport.model_validate(raw)
    except ValidationError as error:
        problems.append(_invalid("/".join((*parts, REPORT_FILE)), error))
        return None
    report: dict[str, Any] = raw
    return report


def list_eval(folder: Folder, parts: tuple[str, ...]) -> EvalListing:
    problems: list[str] = []
    report = _report(folder, parts, problems)
    if report is None:
        return EvalListing(key=key_of(parts), problems=problems)
    return EvalListing(
        key=key_of(parts),
        suite=report["suite"],
        provider=report["provider"],
        model=report["model"],
        started_at=report["started_at"],
        summary=report["summary"],
    )


def run_folder_name(trace_path: str) -> str | None:
    """The run folder's name in a record's ``trace_path`` (``.../traces/<name>/trace.jsonl``):
    only that name is used, looked up under the report's own ``traces/``; the path itself
    is never opened (a hostile report may name ``/etc`` or ``../..``)."""
    pieces = trace_path.replace("\\", "/").split("/")
    if len(pieces) < 2 or pieces[-1] != TRACE_FILE:
        return None
    name = pieces[-2]
    return None if name in ("", ".", "..") or "\0" in name else name


def load_eval(folder: Folder, parts: tuple[str, ...]) -> EvalPage:
    """The report of the results folder ``parts``, each run linked to its folder when here."""
    problems: list[str] = []
    report = _report(folder, parts, problems)
    keys: list[str | None] = []
    for record in (report or {}).get("runs", []):
        name = run_folder_name(str(record.get("trace_path", "")))
        found = None
        if name is not None:
            run_parts = (*parts, EVAL_TRACES, name)
            try:
                found = key_of(run_parts) if folder.kind(run_parts) == "run" else None
            except UsageError:
                found = None
        keys.append(found)
    return EvalPage(key=key_of(parts), report=report, run_keys=keys, problems=problems)
