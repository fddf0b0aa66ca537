"""The stress harness's own logic: the schedule, the judgement of each outcome, the report."""

from __future__ import annotations

import pytest

from sandbox_agent.cli import main
from sandbox_agent.sandbox.base import SandboxResult
from sandbox_agent.stress.report import RunOutcome, build_report, percentile
from sandbox_agent.stress.runner import StressConfig, judge, plan
from sandbox_agent.stress.scenarios import BINARY_PAYLOAD, SCENARIO_NAMES, SCENARIOS

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def _result(status: str, **fields: object) -> SandboxResult:
    return SandboxResult.model_validate(
        {"status": status, "reason": "r", "started": True, "runtime": "runc", **fields}
    )


VERIFIED = {
    "attested": True,
    "exit_report_valid": True,
    "attestation_sha256": "a" * 64,
    "exit_report_sha256": "b" * 64,
}


def test_plan_covers_every_scenario_and_splits_load() -> None:
    runs = plan(StressConfig(runs=25, cpu_load=True, seed=3))
    assert [index for index, _, _ in runs] == list(range(25))
    assert {scenario.name for _, scenario, _ in runs} == set(SCENARIO_NAMES)
    assert [load for _, _, load in runs].count("cpu_load") == 13
    assert plan(StressConfig(runs=25, seed=3)) == plan(StressConfig(runs=25, seed=3))


def test_a_completion_without_evidence_is_unverified() -> None:
    unverified, problem = judge(
        BY_NAME["rapid_exit"], _result("completed", attested=True, exit_code=0)
    )
    assert unverified
    assert problem is not None
    assert "without verified evidence" in problem


def test_a_verified_completion_passes() -> None:
    result = _result("completed", exit_code=0, output=BINARY_PAYLOAD, **VERIFIED)
    assert judge(BY_NAME["binary_output"], result) == (False, None)


@pytest.mark.parametrize(
    ("scenario", "result", "fragment"),
    [
        ("rapid_exit", _result("completed", exit_code=1, **VERIFIED), "expected 0"),
        ("binary_output", _result("completed", exit_code=0, output=b"x", **VERIFIED), "output"),
        ("flood", _result("output_limit", output=b"x" * 10), "exact budget"),
        ("kill_container", _result("completed", exit_code=0, **VERIFIED), "allowed"),
        ("timeout", _result("refused"), "allowed: timeout"),
    ],
)
def test_unexpected_outcomes_are_named(scenario: str, result: SandboxResult, fragment: str) -> None:
    unverified, problem = judge(BY_NAME[scenario], result)
    assert not unverified
    assert problem is not None
    assert fragment in problem


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99)) == (
        50.0,
        90.0,
        99.0,
    )
    assert percentile([], 0.5) == 0.0


def _outcome(index: int, status: str, **fields: object) -> RunOutcome:
    base = {
        "index": index, "scenario": "rapid_exit", "load": "idle", "status": status,
        "started": True, "attested": True, "exit_report_valid": True, "exit_code": 0,
        "latency_ms": 100.0 + index, "action_done": False, "cleanup": "removed",
        "unverified": False,
    }  # fmt: skip
    return RunOutcome.model_validate({**base, **fields})


def test_report_is_ok_only_without_unverified_leftovers_or_surprises() -> None:
    common = {"runtime": "runc", "concurrency": 1, "seed": 0, "cpu_load": False}
    clean = build_report(
        [_outcome(0, "completed"), _outcome(1, "completed")],
        wall_seconds=1.0, leftover_containers=0, leftover_workspaces=0, **common,
    )  # fmt: skip
    assert clean.ok
    assert clean.by_classification == {"completed": 2}
    for leftovers in ({"leftover_containers": 1, "leftover_workspaces": 0},
                      {"leftover_containers": 0, "leftover_workspaces": 1}):  # fmt: skip
        report = build_report([_outcome(0, "completed")], wall_seconds=1.0, **leftovers, **common)
        assert not report.ok
    bad = build_report(
        [_outcome(0, "completed", unverified=True, problem="completed without verified evidence")],
        wall_seconds=1.0, leftover_containers=0, leftover_workspaces=0, **common,
    )  # fmt: skip
    assert (bad.ok, bad.unverified_completions, bad.unexpected_outcomes) == (False, 1, 1)


def test_out_of_range_flags_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stress", "--runs", "0"]) == 2
    assert "--runs must be" in capsys.readouterr().err


def test_a_kill_that_never_landed_may_end_in_timeout() -> None:
    timed_out = _result("timeout")
    assert judge(BY_NAME["kill_container"], timed_out, action_done=False) == (False, None)
    assert judge(BY_NAME["kill_container"], timed_out, action_done=True)[1] is not None
