"""What the model is told after each turn, and what the result and the trace record of it.

The model reads plain text (``observation``, from the templates in ``prompts``): a file
with its lines numbered, a test run's counts and its failing output, one sentence per
fact. The trace and the public result keep summaries only (``tool_call_record``): bulk
text becomes its size and digest.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from sandbox_agent import denials, prompts
from sandbox_agent.controller.models import ToolCallRecord
from sandbox_agent.repair.failures import WORKSPACE_PREFIX, failure_text
from sandbox_agent.tools.contracts import ApplyPatchArgs, ToolOutcome
from sandbox_agent.tools.testrun import TestRun
from sandbox_agent.trace import summarise_value

SYSTEM_PROMPT = prompts.TOOLS_SYSTEM
"""The ``tools`` strategy's system prompt (the text is in ``prompts``)."""
MAX_FILES_WITH_TASK = 100
"""The repository's files shown with the task, at most (``task_message``)."""
MAX_SUMMARY_CHARS = 160
EVIDENCE_KEYS = ("status", "exit_code", "tests_run", "failures", "attested", "runtime")
TEST_OUTPUT_CHARS = 2000
"""The failing part of a test run's output shown to the model, at most."""
GIST_CHARS = 300
"""An earlier answer's first line, at most, when a repeated call is answered from memory."""

ReadOnly = Callable[[str], bool]
"""Whether the policy refuses edits of a path (tests, test configuration, dependencies)."""


def task_message(
    task: str, files: list[str], truncated: bool, *, read_only: ReadOnly | None = None
) -> str:
    """The task as the model reads it: the user's text, then the repository's files (the
    controller's own listing, not a tool call), so a model starts from paths that exist.

    ``read_only``: the policy's protected paths, marked in the listing and said in a
    sentence, so the model does not learn them by denials; None when no edit is allowed.
    """
    listed = [_marked(path, read_only) for path in files]
    return prompts.TOOLS_TASK.format(
        task=task,
        files="\n".join(listed) if listed else prompts.TOOLS_NO_FILES,
        cut=prompts.TOOLS_FILES_CUT.format(count=len(files)) if truncated else "",
        read_only=prompts.TOOLS_READ_ONLY if read_only is not None else "",
    )


def _marked(path: str, read_only: ReadOnly | None) -> str:
    return path + (prompts.TOOLS_READ_ONLY_MARK if read_only and read_only(path) else "")


def observation(
    outcome: ToolOutcome, *, run: TestRun | None = None, read_only: ReadOnly | None = None
) -> str:
    """The controller's answer to the model, as plain text.

    Args:
        outcome: the tool's outcome.
        run: for ``run_tests``, the run itself (its output shows what failed).
        read_only: marks protected paths in a ``list_files`` answer.
    """
    if outcome.denial is not None:
        return refusal_observation(outcome.denial, outcome.message)
    result = outcome.result
    try:
        if outcome.tool == "read_file":
            return _read(result)
        if outcome.tool == "list_files":
            return _listed(result, read_only)
        if outcome.tool == "search":
            return _searched(result, outcome.message)
        if outcome.tool == "apply_patch":
            return _patched(result)
        if outcome.tool == "run_tests":
            return tests_observation(result, run)
    except (KeyError, TypeError, ValueError):
        pass  # a result of another shape: its message says what happened
    return outcome.message or prompts.TOOLS_OK


_NUMBERED = re.compile(r"^ *[0-9]+\t", re.MULTILINE)


def patch_hint(args: object, denial: str | None) -> str:
    """A word on a patch whose ``old`` was not found because it kept the numbers
    ``read_file`` shows (``12<TAB>code``); empty otherwise."""
    if denial != denials.PATCH_NOT_FOUND or not isinstance(args, ApplyPatchArgs):
        return ""
    numbered = any(_NUMBERED.search(edit.old) for edit in args.edits)
    return prompts.TOOLS_OLD_NUMBERED if numbered else ""


def refusal_observation(code: str, message: str) -> str:
    """The answer to a refused call, or to output that was not a valid, allowed call."""
    return prompts.TOOLS_REFUSED.format(code=code, message=message)


def _read(result: dict[str, Any]) -> str:
    path, content = str(result["path"]), str(result["content"])
    if not content:
        return prompts.TOOLS_READ_EMPTY.format(path=path)
    start, end, total = int(result["start_line"]), int(result["end_line"]), result["total_lines"]
    width = len(str(end))
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    numbered = "\n".join(
        f"{number:>{width}}\t{line}" for number, line in enumerate(lines, start=start)
    )
    more = prompts.TOOLS_READ_MORE.format(next=end + 1) if result.get("truncated") else ""
    return prompts.TOOLS_READ.format(
        path=path, start=start, end=end, total=total, more=more, lines=numbered
    )


def _listed(result: dict[str, Any], read_only: ReadOnly | None) -> str:
    files = [str(path) for path in result["files"]]
    folder = str(result.get("path") or "")
    where = f"'{folder}'" if folder not in ("", ".") else "the repository"
    if not files:
        return prompts.TOOLS_LISTED_NONE.format(where=where)
    cut = prompts.TOOLS_LISTED_CUT.format(count=len(files)) if result.get("truncated") else ""
    listed = "\n".join(_marked(path, read_only) for path in files)
    return prompts.TOOLS_LISTED.format(count=len(files), where=where, cut=cut, files=listed)


def _searched(result: dict[str, Any], message: str) -> str:
    folder = str(result.get("path") or "")
    text = prompts.TOOLS_SEARCHED.format(
        pattern=json.dumps(str(result["pattern"]), ensure_ascii=False),
        where=f" in '{folder}'" if folder not in ("", ".") else "",
        summary=message,
    )
    found = [f"{m['path']}:{m['line']}: {m['text']}" for m in result["matches"]]
    return "\n".join([text, *found])


def _patched(result: dict[str, Any]) -> str:
    edits = int(result["edits"])
    files = [str(path) for path in result["files"]]
    text = prompts.TOOLS_PATCHED.format(
        edits=f"{edits} edit" + ("s" if edits != 1 else ""), files=", ".join(files)
    )
    created = [str(path) for path in result.get("created", [])]
    return text + (prompts.TOOLS_CREATED.format(files=", ".join(created)) if created else "")


def tests_observation(result: dict[str, Any], run: TestRun | None) -> str:
    """A test run for the model: its counts in one sentence, then what failed (the failing
    part of its output, where the runner shows the values a failed ``assert`` compared)."""
    if result.get("passed"):
        text = prompts.TOOLS_TESTS_PASSED.format(tests_run=result["tests_run"])
    elif result.get("status") == "completed" and int(result.get("tests_run") or 0) > 0:
        text = prompts.TOOLS_TESTS_FAILED.format(
            tests_run=result["tests_run"], failures=result["failures"]
        )
    else:
        text = prompts.TOOLS_TESTS_UNFINISHED.format(reason=str(result["reason"]).rstrip("."))
    if result.get("selector"):
        text = prompts.TOOLS_SELECTOR.format(text=text, selector=result["selector"])
    if result.get("passed"):
        return text
    output = failing_output(run) if run is not None else _summary_tail(result)
    return text + (prompts.TOOLS_TEST_OUTPUT.format(output=output) if output else "")


def run_counts(run: TestRun) -> str:
    """``N ran, F failed``, or why the run did not come to counts (a time-out, ...)."""
    if run.status == "completed" and run.tests_run > 0:
        return f"{run.tests_run} ran, {run.failures} failed"
    return run.reason.rstrip(".")


def failing_output(run: TestRun) -> str:
    """The part of a failed run's output that says what failed, bounded and printable,
    its paths relative to the repository (as the tools take them)."""
    output = run.sandbox.output.decode("utf-8", errors="replace")
    output = output.replace(f'"{WORKSPACE_PREFIX}', '"')
    return _printable(failure_text(output, TEST_OUTPUT_CHARS))


def _summary_tail(result: dict[str, Any]) -> str:
    """The output lines of a run's bounded summary (its first line is the counts)."""
    return str(result.get("summary") or "").partition("\n")[2].strip()


def _printable(text: str) -> str:
    """``text`` with control and format characters replaced (the output is the
    workload's): newlines and tabs kept."""
    return "".join(
        "?" if char not in "\n\t" and unicodedata.category(char) in ("Cc", "Cf", "Cs") else char
        for char in text
    )


def gist(observation_text: str) -> str:
    """An answer's first line, bounded: what a repeated call is reminded of."""
    first = observation_text.strip().partition("\n")[0]
    return first if len(first) <= GIST_CHARS else first[: GIST_CHARS - 1] + "…"


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
