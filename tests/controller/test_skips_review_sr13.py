"""SR-13 F1: a skipped test counted as a pass.

Code under test that raises ``unittest.SkipTest`` (or calls ``pytest.skip`` or
``pytest.xfail``) turned the failing test into a skip, and the run ended SUCCEEDED with
the bug unfixed: the judge counted no failure, and the baseline counted a skipped id as
run. Each test was written against the code before the fix and failed there. The runs
are real Docker runs; the plans use the six tools only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_runs import BUGGY_ADD, FINISH, RUN_TESTS, config, make_repo, replace

from sandbox_agent.controller import run_task

UNITTEST_TESTS = (
    "import unittest\n\nfrom pkg.core import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    @unittest.skip('never on this project')\n"
    "    def test_static_skip(self):\n        self.fail('skipped')\n\n"
    "    def test_skips_itself(self):\n        self.skipTest('the original skips this too')\n\n"
    "    def test_other(self):\n        self.assertTrue(True)\n"
)
PYTEST_TESTS = (
    "import pytest\n\nfrom pkg.core import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "@pytest.mark.skip(reason='never on this project')\ndef test_static_skip():\n"
    "    assert False\n\n\ndef test_skips_itself():\n    pytest.skip('the original too')\n\n\n"
    "def test_other():\n    assert True\n"
)
SKIPPING_ADD = {
    "unittest": "def add(a, b):\n    import unittest\n    raise unittest.SkipTest('platform')\n",
    "pytest-skip": "def add(a, b):\n    import pytest\n    pytest.skip('platform')\n",
    "pytest-xfail": "def add(a, b):\n    import pytest\n    pytest.xfail('known')\n",
}
FIXED_ADD = "def add(a, b):\n    return a + b\n"


def _repo(tmp_path: Path, runner: str) -> Path:
    files = {"pkg/__init__.py": "", "pkg/core.py": BUGGY_ADD}
    if runner == "unittest":
        files |= {"tests/__init__.py": "", "tests/test_core.py": UNITTEST_TESTS}
    else:
        files |= {"pyproject.toml": "[tool.pytest.ini_options]\n"}
        files |= {"tests/test_core.py": PYTEST_TESTS}
    return make_repo(tmp_path / "repo", files)


@pytest.mark.docker
@pytest.mark.parametrize("how", sorted(SKIPPING_ADD))
def test_f1_a_failing_test_made_to_skip_is_not_a_pass(tmp_path: Path, how: str) -> None:
    repo = _repo(tmp_path, "unittest" if how == "unittest" else "pytest")
    steps = [replace("pkg/core.py", BUGGY_ADD, SKIPPING_ADD[how]), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == "FAILED", result.reason
    assert result.final_tests is not None
    assert not result.final_tests.passed
    assert "skipped" in result.reason
    assert "test_add" in result.reason


@pytest.mark.docker
@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_f1_skips_the_original_has_too_stay_allowed(tmp_path: Path, runner: str) -> None:
    repo = _repo(tmp_path, runner)
    steps = [replace("pkg/core.py", BUGGY_ADD, FIXED_ADD), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == "SUCCEEDED", result.reason


@pytest.mark.docker
def test_f1_a_skipping_candidate_does_not_end_the_repair_search(tmp_path: Path) -> None:
    from sandbox_agent.controller.models import RepairOptions

    repo = _repo(tmp_path, "unittest")
    replies = [f"```python\n{SKIPPING_ADD['unittest']}```", f"```python\n{FIXED_ADD}```"]
    run_config = config(tmp_path, repo, [{"raw": reply} for reply in replies])
    run_config = run_config.model_copy(
        update={"strategy": "repair", "repair": RepairOptions(candidates=2, rounds=0)}
    )
    result = run_task(run_config)
    assert result.status == "SUCCEEDED", result.reason
    first, second = result.candidates
    assert first.outcome == "failed"
    assert "skipped" in first.reason
    assert second.outcome == "passed"


# --- the retest (docs/review/SR-13.md, "Retest"): R1, R2 -----------------------------------

SHOULD_STOP_ADD = "def add(a, b):\n    import unittest\n    raise unittest.case._ShouldStop()\n"
SUBTEST_TESTS = (
    "import unittest\n\nfrom pkg.core import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        for a, b, c in [(2, 3, 5), (1, 1, 2)]:\n"
    "            with self.subTest(a=a, b=b):\n"
    "                self.assertEqual(add(a, b), c)\n\n"
    "    def test_one(self):\n        self.assertTrue(True)\n\n"
    "    def test_two(self):\n        self.assertTrue(True)\n\n"
    "    def test_three(self):\n        self.assertTrue(True)\n"
)


@pytest.mark.docker
@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_r1_unittests_own_stop_signal_raised_by_code_under_test_is_no_pass(
    tmp_path: Path, runner: str
) -> None:
    # unittest's testPartExecutor swallows _ShouldStop (its own signal, raised by subTest
    # after a failure under failfast or an expected failure) and counts the test passed.
    repo = _repo(tmp_path, "unittest")
    steps = [replace("pkg/core.py", BUGGY_ADD, SHOULD_STOP_ADD), RUN_TESTS, FINISH]
    run_config = config(tmp_path, repo, steps).model_copy(update={"runner": runner})
    result = run_task(run_config)
    assert result.status == "FAILED", result.reason
    assert result.final_tests is not None
    assert not result.final_tests.passed


@pytest.mark.docker
def test_r2_a_skip_inside_a_subtest_is_the_tests_skip(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"pkg/__init__.py": "", "pkg/core.py": BUGGY_ADD, "tests/__init__.py": "",
         "tests/test_core.py": SUBTEST_TESTS},
    )  # fmt: skip
    steps = [replace("pkg/core.py", BUGGY_ADD, SKIPPING_ADD["unittest"]), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == "FAILED", result.reason
    assert "tests.test_core.TestAdd.test_add" in result.reason


UNIMPORTABLE_ADD = "def add(a, b)\n    return a - b\n"
"""A bug that stops the test module's import (a syntax error in the code under test)."""


def _unimportable_repo(tmp_path: Path, tests: str) -> Path:
    files = {"pkg/__init__.py": "", "pkg/core.py": UNIMPORTABLE_ADD}
    files |= {"tests/__init__.py": "", "tests/test_core.py": tests}
    return make_repo(tmp_path / "repo", files)


@pytest.mark.docker
def test_sr14_f3_a_skip_in_a_module_the_original_could_not_import_is_not_a_pass(
    tmp_path: Path,
) -> None:
    # The bug stops the test module's import (a syntax error in the code under test):
    # neither the collect-only run nor the original's own run lists its tests. A final
    # tree that mends the import and makes the failing test skip passed: one test of the
    # module ran, and its skips were compared with nothing.
    skipping = "def add(a, b):\n    import unittest\n    raise unittest.SkipTest('platform')\n"
    repo = _unimportable_repo(tmp_path, UNITTEST_TESTS)
    steps = [replace("pkg/core.py", UNIMPORTABLE_ADD, skipping), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == "FAILED", result.reason
    assert "skipped in modules the original could not import" in result.reason
    assert "tests.test_core.TestAdd.test_add" in result.reason


NO_SKIPS = (
    "import unittest\n\nfrom pkg.core import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_other(self):\n        self.assertTrue(True)\n"
)


@pytest.mark.docker
@pytest.mark.parametrize(("tests", "status"), [(NO_SKIPS, "SUCCEEDED"), (UNITTEST_TESTS, "FAILED")])
def test_sr14_f3_mending_a_module_the_original_could_not_import(
    tmp_path: Path, tests: str, status: str
) -> None:
    # An honest mend succeeds; but the module's own skips (a static one, one a test makes
    # itself) are no pass, as no run of the original says it skips them: it fails closed.
    repo = _unimportable_repo(tmp_path, tests)
    steps = [replace("pkg/core.py", UNIMPORTABLE_ADD, FIXED_ADD), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == status, result.reason
    if status == "FAILED":
        assert "skipped in modules the original could not import" in result.reason
