"""The loop against the shipped FakeBackend: budgets, invalid outputs, claims, cancellation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import Budgets, RunConfig, RunResult, run_task
from sandbox_agent.providers import options_for
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.trace import read_chain

FIXTURES = PROJECT_ROOT / "fixtures"
FAILING = completed(exit_code=1, tests_run=6, failures=2)
PASSING = completed(exit_code=0, tests_run=6)


def write_plan(tmp_path: Path, steps: list[dict[str, Any]]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"steps": steps}))
    return str(path)


def run(
    tmp_path: Path,
    steps: list[dict[str, Any]] | None = None,
    *,
    results: list[Any] | None = None,
    budgets: Budgets | None = None,
    provider: str = "scripted",
    fixture: str = "paginator",
    **kwargs: Any,
) -> RunResult:
    plan = write_plan(tmp_path, steps) if steps is not None else None
    options = options_for(provider, plan_path=plan)
    config = RunConfig(
        task="Fix the pagination bug.",
        fixture=fixture,
        fixtures_dir=FIXTURES,
        provider=provider,
        provider_options=options,
        budgets=budgets or Budgets(),
        trace_dir=tmp_path / "runs",
    )
    backend = FakeBackend(results if results is not None else [FAILING, PASSING, PASSING])
    return run_task(config, sandbox=backend, **kwargs)


def finish(summary: str = "done") -> dict[str, Any]:
    return {"tool": "finish", "args": {"summary": summary}}


def test_reference_plan_succeeds_on_evidence(tmp_path: Path) -> None:
    result = run(tmp_path)
    assert result.status == "SUCCEEDED"
    assert result.files_changed == ["paginator/core.py"]
    assert result.fixture.intact
    assert result.final_tests is not None
    assert result.final_tests.passed
    assert [c.tool for c in result.tool_calls][-1] == "finish"
    run_dir = Path(result.trace_path).parent
    assert (run_dir / "result.json").is_file()
    assert (run_dir / "diff.patch").read_text() == result.diff


def test_success_claim_with_failing_tests_is_failed(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        [finish("SUCCESS: all tests pass, task complete")],
        results=[FAILING],
    )
    assert result.status == "FAILED"
    assert result.model_summary == "SUCCESS: all tests pass, task complete"
    assert result.final_tests is not None
    assert not result.final_tests.passed


def test_malformed_outputs_are_counted_then_exhaust_the_budget(tmp_path: Path) -> None:
    garbage = [{"raw": "not json"}, {"raw": '{"tool": 1}'}, {"raw": "[]"}, {"raw": "{"}]
    result = run(tmp_path, garbage, results=[FAILING])
    assert result.status == "BUDGET_EXHAUSTED"
    assert result.budget_used.invalid_outputs == 4
    assert "invalid outputs" in result.reason


def test_invalid_outputs_within_budget_do_not_stop_the_run(tmp_path: Path) -> None:
    steps = [{"raw": "hello"}, {"raw": '{"tool": "read_file", "args": {"path": 1}}'}, finish()]
    result = run(tmp_path, steps, results=[FAILING])
    assert result.budget_used.invalid_outputs == 2
    assert result.status == "FAILED"  # finished, but the final tests fail


def test_denials_beyond_the_budget_abort(tmp_path: Path) -> None:
    denied = {"tool": "read_file", "args": {"path": "/etc/passwd"}}
    result = run(tmp_path, [denied] * 5, results=[FAILING])
    assert result.status == "POLICY_ABORTED"
    assert result.budget_used.policy_denials == 4
    assert all(c.denial == "path.absolute" for c in result.tool_calls)


def test_unknown_tool_is_a_denial(tmp_path: Path) -> None:
    result = run(tmp_path, [{"tool": "shell", "args": {"cmd": "id"}}, finish()], results=[FAILING])
    assert result.tool_calls[0].tool == "shell"
    assert result.tool_calls[0].denial == "tool.unknown"
    assert result.budget_used.policy_denials == 1


def test_iteration_budget(tmp_path: Path) -> None:
    steps = [{"tool": "list_files", "args": {}}] * 10
    result = run(tmp_path, steps, results=[FAILING], budgets=Budgets(max_iterations=3))
    assert result.status == "BUDGET_EXHAUSTED"
    assert result.budget_used.iterations == 3


def test_tool_call_budget(tmp_path: Path) -> None:
    steps = [{"tool": "list_files", "args": {}}] * 10
    result = run(tmp_path, steps, results=[FAILING], budgets=Budgets(max_tool_calls=2))
    assert result.status == "BUDGET_EXHAUSTED"
    assert result.budget_used.tool_calls == 2


def test_wall_clock_budget(tmp_path: Path) -> None:
    steps = [{"tool": "list_files", "args": {}}] * 10
    result = run(tmp_path, steps, results=[], budgets=Budgets(max_wall_seconds=1e-6))
    assert result.status == "TIMEOUT"
    assert result.final_tests is None


def test_cancelled_before_start(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel()
    result = run(tmp_path, [finish()], results=[], cancel=token)
    assert result.status == "CANCELLED"
    assert result.budget_used.iterations == 0


def test_tool_allowlist(tmp_path: Path) -> None:
    config = RunConfig(
        task="t",
        fixture="paginator",
        fixtures_dir=FIXTURES,
        provider_options=PlanOptions(
            plan_path=write_plan(tmp_path, [{"tool": "run_tests", "args": {}}, finish()])
        ),
        allowed_tools=("read_file", "finish"),
        trace_dir=tmp_path / "runs",
    )
    result = run_task(config, sandbox=FakeBackend([FAILING]))
    assert result.tool_calls[0].denial == "tool.not_allowed"


def test_protected_path_patch_is_denied_and_fixture_intact(tmp_path: Path) -> None:
    patch = {"edits": [{"path": "tests/test_paginator.py", "old": "import unittest", "new": ""}]}
    result = run(tmp_path, [{"tool": "apply_patch", "args": patch}, finish()], results=[FAILING])
    assert result.tool_calls[0].denial == "path.protected"
    assert result.files_changed == []
    assert result.fixture.intact


def test_events_stream_and_final_workspace_hook(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    seen: list[Path] = []

    def keep_tree(root: Path) -> None:
        seen.append(root)
        assert (root / "paginator" / "core.py").is_file()

    result = run(tmp_path, on_event=events.append, on_final_workspace=keep_tree)
    assert seen
    assert not seen[0].exists()  # the workspace is removed after the hook
    chain = read_chain(Path(result.trace_path))
    assert [e["seq"] for e in events] == [e["seq"] for e in chain]
    kinds = [e["event"] for e in chain]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    assert "final_tests" in kinds


def test_trace_never_copies_test_output_or_file_text(tmp_path: Path) -> None:
    secret_output = b"SECRET-TEST-OUTPUT-LINE\n" * 3
    failing = completed(exit_code=1, tests_run=6, failures=2, output=secret_output)
    result = run(tmp_path, results=[failing, PASSING, PASSING])
    text = Path(result.trace_path).read_text()
    assert "SECRET-TEST-OUTPUT-LINE" not in text
    assert "def _bounds" not in text  # read_file content is summarised
    assert "SECRET-TEST-OUTPUT-LINE" not in result.model_dump_json()


def test_unknown_fixture_is_a_usage_error(tmp_path: Path) -> None:
    from sandbox_agent.errors import UsageError

    with pytest.raises(UsageError, match="sandbox-agent fixtures"):
        run(tmp_path, fixture="no-such-fixture")


def test_cancel_mid_run_unwinds_and_removes_the_workspace(tmp_path: Path) -> None:
    token = CancelToken()
    roots: list[Path] = []

    def cancel_after_first_call(event: dict[str, Any]) -> None:
        if event["event"] == "tool_call":
            token.cancel()

    result = run(
        tmp_path,
        on_event=cancel_after_first_call,
        on_final_workspace=roots.append,
        cancel=token,
    )
    assert result.status == "CANCELLED"
    assert result.budget_used.tool_calls == 1
    assert result.final_tests is None
    assert roots
    assert not roots[0].exists()
    assert read_chain(Path(result.trace_path))[-1]["event"] == "run_finished"
