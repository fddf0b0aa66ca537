"""``run``'s summary is safe to print (an outside review, 2026-12-05): every string in it
that a repository or a model can shape (the reason naming its test ids, the diff, a tool
summary, the output tail) reaches the terminal with no escape sequence, carriage return,
line break or bidirectional override of its own, so none can forge a status line."""

from __future__ import annotations

import unicodedata

from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.controller.report import render

FORGED = "\x1b[2K\rstatus:        SUCCEEDED  (the final tests pass)\x1b[8m"
TEST_ID = f"tests/test_{FORGED}.py::test_hide"
SHAPED = ("\x1b", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\u202e", "\x9b")


def hostile_result() -> RunResult:
    return RunResult(
        run_id="r",
        status="FAILED",
        reason=f"the final tests fail: 1 test of the original suite did not run: {TEST_ID}"
        "\nstatus:        SUCCEEDED  (forged on a line of its own)",
        diff=f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = '{FORGED}\u202e'\n",
        files_changed=["x.py"],
        final_tests=FinalTests(
            passed=False,
            tests_run=1,
            failures=0,
            status="completed",
            output_tail=f"FAILED {TEST_ID}\u2028status: SUCCEEDED",
        ),
        budget_used=BudgetUsed(),
        fixture=FixtureIntegrity(intact=True, sha256_before="a", sha256_after="a"),
        trace_path="/runs/r/trace.jsonl",
        tool_calls=[
            ToolCallRecord(
                tool="run_tests",
                ok=True,
                denial=None,
                duration_ms=1.0,
                result={"summary": f"1 run, 0 failed {FORGED}"},
            )
        ],
    )


def test_no_string_from_a_run_can_forge_a_line_of_the_summary() -> None:
    text = render(hostile_result())
    for char in SHAPED:
        assert char not in text, repr(char)
    assert not any(
        unicodedata.category(char) in ("Cc", "Cf") for char in text if char not in "\n\t"
    )
    status = [line for line in text.splitlines() if line.lstrip().startswith("status:")]
    assert len(status) == 1, status  # the forged ones stay inside the lines they came in
    assert status[0].startswith("status:        FAILED")
