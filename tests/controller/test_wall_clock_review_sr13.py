"""SR-13 F3: the run's wall clock stops a test run that has already started.

A ``--max-wall-seconds 10`` run lasted 41-57 s, as long as its tests: the loop's
``run_tests``, the final test run and the baseline each ran on to ``--test-timeout``.
Each run here has tests that sleep 50 s under a 120 s test timeout and a 4 s wall clock:
it must end ``TIMEOUT`` (the status rules' wall-clock stop), sealed, a few seconds after
its deadline.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import Budgets, RunConfig, RunResult, run_task
from sandbox_agent.evidence import verify_run
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import SandboxLimits

pytestmark = pytest.mark.docker

WALL_S = 4.0
SLACK_S = 12.0
"""After the deadline: the kill, the stream's end, the container's removal, the seal."""

TEST_MODULE = (
    "import pathlib\nimport time\nimport unittest\n\n"
    "if pathlib.Path('slow.txt').read_text().strip() == 'slow':\n"
    "    time.sleep(50)\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_one(self):\n        self.assertTrue(True)\n"
)
RUN_TESTS = {"tool": "run_tests", "args": {}}
FINISH = {"tool": "finish", "args": {"summary": "done"}}
MAKE_FAST = {
    "tool": "apply_patch",
    "args": {"edits": [{"path": "slow.txt", "old": "slow", "new": "fast"}]},
}


def run(tmp_path: Path, steps: list[dict[str, Any]]) -> tuple[RunResult, float]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_slow.py").write_text(TEST_MODULE)
    (repo / "slow.txt").write_text("slow\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": steps}))
    config = RunConfig(
        task="t",
        repo=repo,
        provider="scripted",
        provider_options=PlanOptions(plan_path=str(plan)),
        budgets=Budgets(max_wall_seconds=WALL_S),
        limits=SandboxLimits(timeout_s=120),
        trace_dir=tmp_path / "runs",
    )
    began = time.monotonic()
    result = run_task(config)
    return result, time.monotonic() - began


def assert_stopped_by_the_wall_clock(result: RunResult, took: float) -> None:
    assert result.status == "TIMEOUT", result.reason
    assert "wall clock" in result.reason
    assert took < WALL_S + SLACK_S, f"{took:.1f} s for a {WALL_S:g} s wall clock"
    assert verify_run(Path(result.run_dir)).ok


def test_sr13_f3_the_loops_run_tests_stops_at_the_wall_clock(tmp_path: Path) -> None:
    result, took = run(tmp_path, [RUN_TESTS, FINISH])
    assert_stopped_by_the_wall_clock(result, took)
    assert [call.tool for call in result.tool_calls] == ["run_tests"]
    assert result.final_tests is None  # a timed-out loop runs no final tests


def test_sr13_f3_the_final_test_run_stops_at_the_wall_clock(tmp_path: Path) -> None:
    result, took = run(tmp_path, [FINISH])
    assert_stopped_by_the_wall_clock(result, took)
    assert result.final_tests is not None
    assert result.final_tests.status == "timeout"


def test_sr13_f3_the_baseline_stops_at_the_wall_clock(tmp_path: Path) -> None:
    """The final run (on the edited, fast tree) passes at once; the baseline (on the
    original, slow tree) is still collecting when the wall clock runs out."""
    result, took = run(tmp_path, [MAKE_FAST, FINISH])
    assert_stopped_by_the_wall_clock(result, took)
    assert result.final_tests is not None
    assert result.final_tests.status == "completed"
