"""``run``'s summary counts in plain words (issue 30): "1 turn", not "1 turns"."""

from __future__ import annotations

import pytest

from sandbox_agent.controller.models import BudgetUsed, FixtureIntegrity, RunResult
from sandbox_agent.controller.report import render


def _budget_line(used: BudgetUsed) -> str:
    result = RunResult(
        run_id="r",
        status="FAILED",
        reason="plan exhausted",
        diff="",
        files_changed=[],
        final_tests=None,
        budget_used=used,
        fixture=FixtureIntegrity(intact=True, sha256_before="a", sha256_after="a"),
        trace_path="/runs/r/trace.jsonl",
        tool_calls=[],
    )
    return next(line for line in render(result).splitlines() if line.startswith("budget used:"))


@pytest.mark.parametrize(
    ("used", "said"),
    [
        (
            BudgetUsed(iterations=1, tool_calls=1, policy_denials=1, invalid_outputs=1),
            "1 turn, 1 tool call, 1 denial, 1 invalid output, 0.50 s",
        ),
        (
            BudgetUsed(iterations=6, tool_calls=0, policy_denials=2, invalid_outputs=0),
            "6 turns, 0 tool calls, 2 denials, 0 invalid outputs, 0.50 s",
        ),
    ],
)
def test_the_budget_line_counts_in_plain_words(used: BudgetUsed, said: str) -> None:
    used.wall_seconds = 0.5
    assert _budget_line(used) == f"budget used:   {said}"
