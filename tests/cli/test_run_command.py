"""`sandbox-agent run` and `sandbox-agent fixtures`: flags, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.cli import main
from sandbox_agent.commands.run import BUDGET_FLAGS
from sandbox_agent.controller.models import Budgets

TASK = "Fix the pagination bug."


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    return err


def test_budget_flag_help_matches_the_defaults() -> None:
    defaults = Budgets()
    for _, dest, _, text in BUDGET_FLAGS:
        assert f"default {getattr(defaults, dest):g})" in text


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--fixture", "nope"], "no fixture 'nope'"),
        (["--fixture", "../paginator"], "no fixture"),
        (["--repo", "/nonexistent/repo"], "does not exist"),
        (["--fixture", "paginator", "--provider", "gpt-9"], "choose one of: scripted"),
        (["--fixture", "paginator", "--max-iterations", "0"], "max_iterations"),
    ],
)
def test_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], fragment: str
) -> None:
    argv = ["run", "--task", TASK, "--trace-dir", str(tmp_path), *extra]
    assert fragment in one_line_error(capsys, argv)


@pytest.mark.parametrize(
    ("command", "extra", "flag"),
    [
        ("run", ["--max-cost-usd", "-1"], "--max-cost-usd"),
        ("run", ["--provider", "openai", "--max-cost-usd", "inf"], "--max-cost-usd"),
        ("run", ["--provider", "local", "--request-timeout", "0"], "--request-timeout"),
        ("run", ["--provider", "anthropic", "--max-calls", "0"], "--max-calls"),
        ("run", ["--provider", "openai", "--price-per-mtok-in", "-2"], "--price-per-mtok-in"),
        ("run", ["--provider", "openai", "--base-url", "file:///etc"], "--base-url"),
        ("eval", ["--provider", "local", "--max-tokens", "0"], "--max-tokens"),
        ("eval", ["--experiment-budget-usd", "nan"], "--experiment-budget-usd"),
    ],
)
def test_a_bad_real_model_flag_is_one_line_naming_the_flag_whatever_the_provider(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    extra: list[str],
    flag: str,
) -> None:
    # The options are one model per provider kind (issue 31); a flag the chosen kind does
    # not use (the spend caps of scripted) is still refused when its value is out of range.
    where = ["--fixture", "paginator", "--task", TASK, "--trace-dir", str(tmp_path)]
    if command == "eval":
        where = ["--tasks", "paginator-fix", "--results-dir", str(tmp_path / "results")]
    error = one_line_error(capsys, [command, *where, *extra])
    assert error.startswith(f"sandbox-agent {command}: {flag}: "), error
    assert "(see --help)" in error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("task", ["   ", "", "\n\t "])
def test_a_blank_task_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, task: str
) -> None:
    # A blank --task ran the whole task-less loop (issue 30); "" said "bad value for task".
    argv = ["run", "--fixture", "paginator", "--task", task, "--trace-dir", str(tmp_path)]
    error = one_line_error(capsys, argv)
    assert error.startswith("sandbox-agent run: --task is blank")
    assert "--task" in error.split(":", 2)[2]
    assert list(tmp_path.iterdir()) == []


def test_bad_plan_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"steps": [{"tool": "finish"}, 3]}')
    argv = ["run", "--fixture", "paginator", "--task", TASK, "--plan", str(plan)]
    assert "is not a plan" in one_line_error(capsys, argv)


def test_fixture_and_repo_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--fixture", "paginator", "--repo", ".", "--task", TASK])
    assert caught.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_fixtures_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fixtures", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["fixtures"]}
    assert {"paginator", "hostile", "csvtable", "ratelimit"} <= set(rows)
    for row in rows.values():
        assert row["runner"] == "unittest"
        assert row["reference_plan"] is True
        assert row["files"] >= 4
        assert row["description"]


def test_missing_fixtures_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["fixtures", "--fixtures-dir", str(tmp_path / "none")]
    assert "does not exist" in one_line_error(capsys, argv)


def test_real_model_budget_flags_reach_the_provider_options() -> None:
    from sandbox_agent.cli import build_parser
    from sandbox_agent.commands.run import build_config
    from sandbox_agent.providers.options import LocalOptions, PlanOptions

    argv = ["run", "--fixture", "paginator", "--task", TASK, "--max-calls", "12"]
    argv += ["--max-tokens", "50000", "--experiment", "smoke", "--max-cost-usd", "0.5"]
    options = build_config(build_parser().parse_args([*argv, "--provider", "local"]))
    local = options.provider_options
    assert isinstance(local, LocalOptions)
    assert (local.max_calls, local.max_tokens, local.experiment) == (12, 50000, "smoke")
    assert local.max_cost_usd == 0.5
    # The default provider replays a plan: the spend flags are not its options.
    assert build_config(build_parser().parse_args(argv)).provider_options == PlanOptions()


def test_the_human_output_names_the_run_folder_and_prints_no_empty_table(tmp_path: Path) -> None:
    from sandbox_agent.controller.models import (
        BudgetUsed,
        FixtureIntegrity,
        RunResult,
    )
    from sandbox_agent.controller.report import render

    result = RunResult(
        run_id="r",
        status="FAILED",
        reason="no test ran",
        diff="",
        files_changed=[],
        final_tests=None,
        budget_used=BudgetUsed(),
        fixture=FixtureIntegrity(intact=True, sha256_before="a", sha256_after="a"),
        trace_path=str(tmp_path / "r" / "trace.jsonl"),
        tool_calls=[],
        run_dir=str(tmp_path / "r"),
    )
    shown = render(result)
    assert f"run folder:    {tmp_path / 'r'}" in shown
    assert "summary" not in shown
