"""Regression tests for the findings of docs/SECURITY_REVIEW.md, written against the code
before any fix. An open finding is ``xfail(strict=True)``: when the fix lands the test
passes, the strict xfail turns that into a failure, and the mark must come off.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from sandbox_agent.policy.protected import protected_reason

UNITTEST_DISCOVERY_PATTERN = "test*.py"
"""What the trusted runner wrapper discovers (sandbox_supervisor.run_tests.run_unittest)."""


# SR-1 (fixed in f238b08): the policy protected only test_*.py, *_test.py and tests.py.
@pytest.mark.parametrize("path", ["test.py", "testhelpers.py", "pkg/testutil.py"])
def test_every_module_the_runner_loads_as_a_test_is_protected(path: str) -> None:
    assert fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], UNITTEST_DISCOVERY_PATTERN)
    assert protected_reason(path) is not None


# SR-2 (tripwire in sandbox_supervisor/tripwire.py): source code imported by the tests
# replaced unittest.TestCase.run with one that always reports success.
FAKE_PASS = (
    "\n\nimport unittest as _unittest\n\n\n"
    "def _always_passes(self, result=None):\n"
    "    result.startTest(self)\n"
    "    result.addSuccess(self)\n"
    "    result.stopTest(self)\n\n\n"
    "_unittest.TestCase.run = _always_passes\n"
)


@pytest.mark.docker
@pytest.mark.slow
def test_code_under_test_cannot_fake_a_passing_suite(tmp_path: Path) -> None:
    from sandbox_agent.controller.loop import run_task
    from sandbox_agent.controller.models import RunConfig
    from sandbox_agent.providers.options import PlanOptions

    init = "paginator/__init__.py"
    plan = {
        "steps": [
            {"tool": "apply_patch", "args": {"edits": [
                {"path": init, "old": '__all__ = ["Page", "PageNotFound", "Paginator"]',
                 "new": '__all__ = ["Page", "PageNotFound", "Paginator"]' + FAKE_PASS},
            ]}},
            {"tool": "finish", "args": {"summary": "all tests pass"}},
        ]
    }  # fmt: skip
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    result = run_task(
        RunConfig(
            fixture="paginator",
            task="fix the paginator",
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan_file)),
            trace_dir=tmp_path / "runs",
        )
    )
    assert result.files_changed == [init]
    assert result.status != "SUCCEEDED", result.final_tests
