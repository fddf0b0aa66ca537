"""What the final tests said, where a user can read it (issue 30): the last lines of the
final run's output, as run_tests shows them to the model, bounded and redacted, in the
result (``final_tests.output_tail``) and the CLI's output."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import MAX_OUTPUT_TAIL_CHARS
from sandbox_agent.controller.report import render
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.fake import FakeBackend, completed

SECRET = "sk-proj-" + "Q7w" * 12
FAILURE = (
    "FAIL: test_first_page (tests.test_core.PageTest.test_first_page)\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/tests/test_core.py", line 9, in test_first_page\n'
    "    self.assertEqual(page.start, 0)\n"
    "AssertionError: 10 != 0\n"
)


def finish_at_once(tmp_path: Path) -> RunConfig:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "done"}}]}))
    return RunConfig(
        task="Fix the paginator.",
        fixture="paginator",
        provider_options=PlanOptions(plan_path=str(plan)),
        trace_dir=tmp_path / "runs",
    )


def test_the_failing_tests_output_is_in_the_result_and_the_output(tmp_path: Path) -> None:
    noise = "".join(f"line {n} of setup chatter\n" for n in range(10_000)).encode()
    output = noise + b"\x1b[31mred\x1b[0m " + SECRET.encode() + b"\n" + FAILURE.encode()
    final = completed(exit_code=1, tests_run=3, failures=1, output=output)

    result = run_task(finish_at_once(tmp_path), sandbox=FakeBackend([final]))

    assert result.final_tests is not None
    tail = result.final_tests.output_tail
    assert tail is not None
    assert tail.endswith("AssertionError: 10 != 0")
    assert "self.assertEqual(page.start, 0)" in tail
    assert SECRET not in tail
    assert "[REDACTED]" in tail
    assert "\x1b" not in tail
    assert len(tail) <= MAX_OUTPUT_TAIL_CHARS
    assert "line 0 of" not in tail  # the tail, not the whole output
    stored = json.loads((Path(result.trace_path).parent / "result.json").read_text())
    assert stored["final_tests"]["output_tail"] == tail
    shown = render(result)
    assert "test output:   the last lines, as run_tests shows them to the model:" in shown
    assert "    AssertionError: 10 != 0" in shown
    assert SECRET not in Path(result.trace_path).read_text()  # the trace keeps no output


def test_a_passing_run_keeps_its_tail_and_the_output_does_not_show_it(tmp_path: Path) -> None:
    final = completed(exit_code=0, tests_run=3, output=b"...\nRan 3 tests in 0.01s\n\nOK\n")

    result = run_task(finish_at_once(tmp_path), sandbox=FakeBackend([final]))

    assert result.final_tests is not None
    assert result.final_tests.output_tail == "...\nRan 3 tests in 0.01s\n\nOK"
    assert "test output:" not in render(result)


def test_a_silent_run_has_no_tail(tmp_path: Path) -> None:
    final = completed(exit_code=1, tests_run=1, failures=1, output=b"")

    result = run_task(finish_at_once(tmp_path), sandbox=FakeBackend([final]))

    assert result.final_tests is not None
    assert result.final_tests.output_tail is None
