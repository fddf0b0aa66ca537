"""The trusted runner wrapper on small temporary repositories, run under PID 1's relay
so that its report travels through fd 3 exactly as in the container."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import Supervised, run_supervised

from repo_files import write_files
from sandbox_supervisor import protocol

PASSING = "import unittest\nclass T(unittest.TestCase):\n    def test_ok(self): pass\n"
FAILING = (
    "import unittest\nclass T(unittest.TestCase):\n"
    "    def test_ok(self): pass\n    def test_bad(self): self.fail('no')\n"
    "    @unittest.skip('later')\n    def test_later(self): pass\n"
)
ERROR = "import unittest\nclass T(unittest.TestCase):\n    def test_boom(self): raise OSError\n"
PYTEST_MIXED = (
    "import pytest\ndef test_a(): pass\ndef test_b(): assert False\n"
    "@pytest.mark.skip\ndef test_c(): pass\n"
    "@pytest.fixture\ndef broken(): raise RuntimeError\ndef test_d(broken): pass\n"
)


def _run(repo: Path, *args: str) -> Supervised:
    argv = [sys.executable, "-I", "-B", "-m", "sandbox_supervisor.run_tests", *args]
    return run_supervised("", argv=argv, cwd=repo, deadline_s=60)


def _counts(run: Supervised) -> dict[str, Any] | None:
    report: dict[str, Any] | None = run.exit_report["runner_report"]
    counts = ("tests_run", "failures", "errors", "skipped")
    return None if report is None else {k: v for k, v in report.items() if k in counts}


def test_unittest_passing_suite_exits_0(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_one.py": PASSING}), "unittest")
    assert run.exit_code == 0
    assert run.exit_report["runner_report"] == {
        "runner": "unittest",
        "tests_run": 1,
        "failures": 0,
        "errors": 0,
        "skipped": 0,
        "mode": "run",
        "ids": ["test_one.T.test_ok"],
        "broken": [],
        "skipped_ids": [],
    }


def test_unittest_failures_errors_and_skips_are_counted(tmp_path: Path) -> None:
    repo = write_files(tmp_path, {"tests/test_f.py": FAILING, "tests/test_e.py": ERROR})
    (repo / "tests" / "__init__.py").write_text("")
    run = _run(repo, "unittest")
    assert run.exit_code == 1
    assert _counts(run) == {"tests_run": 4, "failures": 1, "errors": 1, "skipped": 1}


def test_unittest_with_no_tests_does_not_pass(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"util.py": "X = 1\n"}), "unittest")
    assert run.exit_code == 1
    assert _counts(run) == {"tests_run": 0, "failures": 0, "errors": 0, "skipped": 0}


def test_unittest_import_error_is_an_error(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_x.py": "import missing_module\n"}), "unittest")
    assert run.exit_code == 1
    counts = _counts(run)
    assert counts is not None
    assert counts["errors"] == 1


def test_unittest_selector_runs_one_test(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_f.py": FAILING}), "unittest", "test_f.T.test_ok")
    assert run.exit_code == 0
    assert _counts(run) == {"tests_run": 1, "failures": 0, "errors": 0, "skipped": 0}


def test_unittest_bad_selector_is_an_error(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_f.py": FAILING}), "unittest", "test_f.Nope")
    assert run.exit_code == 1
    counts = _counts(run)
    assert counts is not None
    assert counts["errors"] == 1


def test_a_repository_cannot_shadow_the_wrapper(tmp_path: Path) -> None:
    shadow = "import os\nos.write(3, b'{}')\nos._exit(0)\n"
    repo = write_files(
        tmp_path, {"test_one.py": PASSING, "sandbox_supervisor/run_tests.py": shadow}
    )
    (repo / "sandbox_supervisor" / "__init__.py").write_text("")
    run = _run(repo, "unittest")
    assert run.exit_code == 0
    assert _counts(run) is not None


def test_a_test_that_exits_early_leaves_no_report(tmp_path: Path) -> None:
    code = "import os, unittest\nclass T(unittest.TestCase):\n    def test(self): os._exit(0)\n"
    run = _run(write_files(tmp_path, {"test_exit.py": code}), "unittest")
    assert run.exit_code == 0
    assert run.exit_report["runner_report"] is None


def test_pytest_counts_pass_fail_skip_and_error(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_p.py": PYTEST_MIXED}), "pytest")
    assert run.exit_code == 1
    assert run.exit_report["runner_report"]["runner"] == "pytest"
    assert _counts(run) == {"tests_run": 4, "failures": 1, "errors": 1, "skipped": 1}


def test_pytest_selector_and_pass(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_p.py": PYTEST_MIXED}), "pytest", "test_p.py::test_a")
    assert run.exit_code == 0
    assert _counts(run) == {"tests_run": 1, "failures": 0, "errors": 0, "skipped": 0}


def test_pytest_collection_error_is_an_error(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_p.py": "import missing_module\n"}), "pytest")
    assert run.exit_code == 1
    counts = _counts(run)
    assert counts is not None
    assert counts["errors"] == 1
    assert counts["tests_run"] == 0


@pytest.mark.parametrize("args", [(), ("nose",), ("unittest", "a", "b")])
def test_usage_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    run = _run(tmp_path, *args)
    assert run.exit_code == 2
    assert run.exit_report["runner_report"] is None


# SR-2 (docs/SECURITY_REVIEW.md): source code imported by the tests replaces the runner.
FAKE_PASS_SOURCE = (
    "import unittest\n\n"
    "def _always_passes(self, result=None):\n"
    "    result.startTest(self)\n"
    "    result.addSuccess(self)\n"
    "    result.stopTest(self)\n\n"
    "unittest.TestCase.run = _always_passes\n"
    "def answer():\n    return 41\n"
)
TEST_OF_SOURCE = (
    "import unittest\nimport lib\n"
    "class T(unittest.TestCase):\n"
    "    def test_answer(self): self.assertEqual(lib.answer(), 42)\n"
)


def test_source_that_replaces_the_unittest_runner_fails_the_run(tmp_path: Path) -> None:
    repo = write_files(tmp_path, {"lib.py": FAKE_PASS_SOURCE, "test_lib.py": TEST_OF_SOURCE})
    run = _run(repo, "unittest")
    assert run.exit_code == 1
    assert _counts(run) == {"tests_run": 1, "failures": 0, "errors": 1, "skipped": 0}
    assert b"replaced the runner: unittest.TestCase.run" in run.data(protocol.KIND_STDERR)


def test_source_that_replaces_the_runner_under_pytest_fails_the_run(tmp_path: Path) -> None:
    pytest_test = "import lib\ndef test_answer():\n    assert lib.answer() == 42\n"
    patch_pytest = (
        "import _pytest.runner\n"
        "_pytest.runner.call_and_report = lambda *a, **k: None\n"
        "def answer():\n    return 41\n"
    )
    repo = write_files(tmp_path, {"lib.py": patch_pytest, "test_lib.py": pytest_test})
    run = _run(repo, "pytest")
    assert run.exit_code == 1
    assert b"replaced the runner: _pytest.runner.call_and_report" in run.data(protocol.KIND_STDERR)


def test_an_honest_suite_trips_nothing(tmp_path: Path) -> None:
    honest = "def answer():\n    return 42\n"
    repo = write_files(tmp_path, {"lib.py": honest, "test_lib.py": TEST_OF_SOURCE})
    for runner in ("unittest", "pytest"):
        run = _run(repo, runner)
        assert run.exit_code == 0, run.data(protocol.KIND_STDERR)
        assert b"replaced the runner" not in run.data(protocol.KIND_STDERR)


BARE_ASSERTS = (
    "import unittest\n\ndef double(x):\n    return x + 1\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_compare(self):\n        assert double(3) == 6\n"
    "    def test_message(self):\n        assert double(3) == 6, 'kept as written'\n"
    "    def test_truthy(self):\n        assert double(-1)\n"
    "    def test_counted(self):\n        self.assertEqual(double(3), 6)\n"
    "    def test_long(self):\n        assert [1] * 1000 == [2]\n"
)


def test_a_bare_failed_comparison_shows_both_sides(tmp_path: Path) -> None:
    run = _run(write_files(tmp_path, {"test_values.py": BARE_ASSERTS}), "unittest")
    text = run.data().decode()
    assert "AssertionError: assert double(3) == 6: left is 4, right is 6" in text
    assert "AssertionError: kept as written" in text
    assert "AssertionError: 4 != 6" in text
    assert "\nAssertionError\n" in text  # a bare truthiness assert: nothing to add
    long_line = next(line for line in text.splitlines() if "[1] * 1000" in line and "left" in line)
    assert long_line.endswith("..., right is [2]")
    assert len(long_line) < 300
    assert _counts(run) == {"tests_run": 5, "failures": 5, "errors": 0, "skipped": 0}


def test_explain_adds_nothing_where_it_has_nothing_to_say() -> None:
    from sandbox_supervisor.asserts import explain

    assert explain(ValueError("x"), None) is None
    assert explain(AssertionError("message"), None) is None
    assert explain(AssertionError(), None) is None


def test_the_stop_guard_keeps_subtests_own_stops_and_refuses_the_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SR-13's retest, R1: code under test that raised unittest.case._ShouldStop made its
    # test pass. subTest's own stops (after a failure under failfast, an expected failure)
    # must keep their meaning.
    import unittest

    from sandbox_supervisor.outcomes import Ledger, guard_unittest

    monkeypatch.setattr(
        unittest.case._Outcome, "testPartExecutor", unittest.case._Outcome.testPartExecutor
    )
    guard_unittest(Ledger(), lambda test: test.id())

    class T(unittest.TestCase):
        def test_raised_by_the_code(self) -> None:
            raise unittest.case._ShouldStop()

        @unittest.expectedFailure
        def test_expected_failure_in_a_subtest(self) -> None:
            with self.subTest(n=1):
                self.fail("expected")

        def test_failfast_stop_after_a_subtest_failure(self) -> None:
            for n in (1, 2):
                with self.subTest(n=n):
                    self.fail(f"subtest {n}")

    def run(name: str, *, failfast: bool = False) -> unittest.TestResult:
        result = unittest.TestResult()
        result.failfast = failfast
        T(name).run(result)
        return result

    raised = run("test_raised_by_the_code")
    assert not raised.wasSuccessful()
    assert "_ShouldStop was raised by the code under test" in raised.failures[0][1]
    assert len(run("test_expected_failure_in_a_subtest").expectedFailures) == 1
    stopped = run("test_failfast_stop_after_a_subtest_failure", failfast=True)
    assert len(stopped.failures) == 1  # the first subtest's; the stop ended the test


ASSERTING = """\
import unittest


def double(x):
    return x + x + 1


class T(unittest.TestCase):
    def test_double(self):
        self.assertEqual(double(2), 4)
"""


def test_a_failed_assertion_names_the_test_line_that_failed(tmp_path: Path) -> None:
    # unittest keeps a failure's frames only up to the first frame of its own; the
    # runner's guard around unittest's test executor (SR-13 R1) was a frame of neither,
    # so every assertion failure showed the runner's line and not the test's, and the
    # repair strategy could not tell which test failed
    run = _run(write_files(tmp_path, {"test_one.py": ASSERTING}), "unittest")
    output = run.data().decode()
    assert 'test_one.py", line 10, in test_double' in output, output
    assert "self.assertEqual(double(2), 4)" in output
    assert "sandbox_supervisor" not in output
