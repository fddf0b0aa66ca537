"""The ``repair`` strategy end to end in verified sandboxes: exact scripted candidates, the
real runner, the real verdict, sealed evidence that verifies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import RepairOptions
from sandbox_agent.providers.options import PlanOptions

pytestmark = pytest.mark.docker

SOLUTION = 'def add(a, b):\n    """Add two numbers."""\n    return a - b\n'
TESTS = (
    "import unittest\n\nfrom solution import add\n\n\n"
    "class ExampleTests(unittest.TestCase):\n"
    "    def test_examples(self):\n        assert add(2, 3) == 5\n"
)
CANDIDATES = [
    "The bug is the minus sign.",  # no code block: an invalid output
    "```python\ndef add(a, b):\n    return a * b\n```",  # wrong: fails its sandbox run
    "```python\nimport operator\n\ndef add(a, b):\n    return operator.add(a, b)\n```",
]


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_scripted_candidates_are_tested_in_verified_sandboxes(tmp_path: Path, runtime: str) -> None:
    from sandbox_agent.evidence import verify_run

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "solution.py").write_text(SOLUTION)
    (repo / "test_examples.py").write_text(TESTS)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"raw": text} for text in CANDIDATES]}))
    result = run_task(
        RunConfig(
            task="Fix the bug in add.",
            repo=repo,
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="repair",
            repair=RepairOptions(candidates=3, rounds=0),
            runtime=runtime,  # type: ignore[arg-type]
            trace_dir=tmp_path / "runs",
        )
    )
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["refused", "failed", "passed"]
    failed = result.candidates[1]
    assert (failed.tests_run, failed.failures) == (1, 1)
    assert "import operator" in result.diff
    assert (repo / "solution.py").read_text() == SOLUTION  # the original is never touched
    runs = [c for c in result.tool_calls if c.tool == "run_tests"]
    assert [r.result["attested"] for r in runs] == [True, True, True]
    assert {r.result["runtime"] for r in runs} == {runtime}
    assert result.final_tests is not None
    assert result.final_tests.passed
    assert verify_run(Path(result.trace_path).parent).ok
