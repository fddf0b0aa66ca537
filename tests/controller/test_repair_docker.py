"""The ``repair`` strategy end to end in verified sandboxes: exact scripted candidates, the
real runner, the real verdict, sealed evidence that verifies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.controller import RunConfig, RunResult, run_task
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


def repair(
    tmp_path: Path, repo: Path, task: str, candidates: list[str], *, runtime: str = "runc"
) -> RunResult:
    """``task`` on ``repo`` by the repair strategy, ``candidates`` the model's exact replies,
    one round of as many candidates as there are replies."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"raw": text} for text in candidates]}))
    return run_task(
        RunConfig(
            task=task,
            repo=repo,
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="repair",
            repair=RepairOptions(candidates=len(candidates), rounds=0),
            runtime=runtime,  # type: ignore[arg-type]
            trace_dir=tmp_path / "runs",
        )
    )


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_scripted_candidates_are_tested_in_verified_sandboxes(tmp_path: Path, runtime: str) -> None:
    from sandbox_agent.evidence import verify_run

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "solution.py").write_text(SOLUTION)
    (repo / "test_examples.py").write_text(TESTS)
    result = repair(tmp_path, repo, "Fix the bug in add.", CANDIDATES, runtime=runtime)
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


ENDLESS = (
    "def odd_collatz(n):\n"
    '    """The odd numbers of the Collatz sequence from n, sorted."""\n'
    "    odds = []\n"
    "    while n != 1:\n"
    "        if n % 2:\n"
    "            odds.append(n)\n"
    "    return sorted(odds + [1])\n"
)
ENDLESS_TESTS = (
    "import unittest\n\nfrom solution import odd_collatz\n\n\n"
    "class ExampleTests(unittest.TestCase):\n"
    "    def test_examples(self):\n        self.assertEqual(odd_collatz(5), [1, 5])\n"
)
ENDLESS_FIXED = (
    "```python\ndef odd_collatz(n):\n    odds = []\n    while n != 1:\n        if n % 2:\n"
    "            odds.append(n)\n            n = 3 * n + 1\n        else:\n"
    "            n //= 2\n    return sorted(odds + [1])\n```"
)


def test_tests_the_bug_makes_run_out_of_memory_are_repaired(tmp_path: Path) -> None:
    """HumanEvalFix row 123's shape: the bug loops forever appending, the visible run is
    killed for memory, and the strategy stopped there without asking the model."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "solution.py").write_text(ENDLESS)
    (repo / "test_examples.py").write_text(ENDLESS_TESTS)
    result = repair(tmp_path, repo, "Fix the bug in odd_collatz.", [ENDLESS_FIXED])
    runs = [c for c in result.tool_calls if c.tool == "run_tests"]
    assert runs[0].result["status"] == "oom_killed"
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["passed"]
