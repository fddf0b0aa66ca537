"""A small real stress session on each runtime: no unverified completion, nothing left behind."""

from __future__ import annotations

import pytest

from sandbox_agent.sandbox.base import Runtime
from sandbox_agent.stress import StressConfig, run_stress
from sandbox_agent.stress.scenarios import SCENARIO_NAMES

RUNS = 12


def _check(runtime: Runtime) -> None:
    report = run_stress(
        StressConfig(runs=RUNS, concurrency=2, runtime=runtime, seed=7, cpu_load=True)
    )
    assert report.runs == RUNS
    assert report.unverified_completions == 0
    assert report.leftover_containers == 0
    assert report.leftover_workspaces == 0
    assert report.problems == []
    assert report.ok
    assert set(report.by_scenario) == set(SCENARIO_NAMES)
    assert set(report.by_load) == {"idle", "cpu_load"}
    assert report.by_classification.get("completed", 0) >= 4


@pytest.mark.docker
@pytest.mark.slow
def test_stress_runc() -> None:
    _check("runc")


@pytest.mark.docker
@pytest.mark.runsc
@pytest.mark.slow
def test_stress_runsc() -> None:
    _check("runsc")
