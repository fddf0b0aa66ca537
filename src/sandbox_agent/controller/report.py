"""The human form of a run result: status, budgets, tests, files, integrity, calls, diff."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.controller.models import RunResult
from sandbox_agent.printable import printable

MAX_DIFF_LINES = 200


def render(result: RunResult) -> str:
    """The text ``sandbox-agent run`` prints (without ``--json``): one line per item, each
    made printable (``sandbox_agent.printable``), so nothing a run holds (a test id in the
    reason, a line of the diff) can move the cursor or start a line of its own."""
    used = result.budget_used
    lines = [
        f"status:        {result.status}  ({result.reason})",
        f"run:           {result.run_id}  provider={result.provider} runtime={result.runtime}",
        f"budget used:   {_count(used.iterations, 'turn')}, "
        f"{_count(used.tool_calls, 'tool call')}, {_count(used.policy_denials, 'denial')}, "
        f"{_count(used.invalid_outputs, 'invalid output')}, {used.wall_seconds:.2f} s",
    ]
    if result.provider_error is not None:
        error = result.provider_error
        lines.append(f"provider error: {error.line()}  [{error.kind}]")
    tests = result.final_tests
    lines.append(
        "final tests:   none"
        if tests is None
        else f"final tests:   {'PASSED' if tests.passed else 'FAILED'}  {tests.tests_run} run, "
        f"{tests.failures} failed, sandbox {tests.status}"
        + (" (the last run_tests, on the same bytes)" if tests.reused else "")
    )
    if tests is not None and not tests.passed and tests.output_tail:
        lines.append("test output:   the last lines, as run_tests shows them to the model:")
        lines.extend(f"    {line}" for line in tests.output_tail.split("\n"))
    lines.append(f"files changed: {', '.join(result.files_changed) or 'none'}")
    fixture = result.fixture
    intact = "intact" if fixture.intact else "CHANGED"
    lines.append(f"original:      {intact}  sha256 {fixture.sha256_after}")
    if result.model_summary is not None:
        lines.append(f"model said:    {result.model_summary[:200]!r} (recorded, not believed)")
    lines.append(f"run folder:    {result.run_dir or Path(result.trace_path).parent}")
    lines.append(f"trace:         {result.trace_path}")
    if result.tool_calls:
        lines.append("")
        lines.append(f"  #  {'tool':<12} {'ok':<8} {'ms':>8}  summary")
    for index, call in enumerate(result.tool_calls, 1):
        ok = "ok" if call.ok else ("denied" if call.denial else "error")
        summary = str(call.result.get("summary", ""))[:100]
        lines.append(f"{index:>3}  {call.tool:<12} {ok:<8} {call.duration_ms:>8.1f}  {summary}")
    if result.diff:
        diff_lines = result.diff.rstrip("\n").split("\n")  # not splitlines: a "\r" is no break
        lines.append("")
        lines.extend(diff_lines[:MAX_DIFF_LINES])
        if len(diff_lines) > MAX_DIFF_LINES:
            lines.append(f"... {len(diff_lines) - MAX_DIFF_LINES} more diff lines in diff.patch")
    return "\n".join(printable(line) for line in lines) + "\n"


def _count(number: int, noun: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
