"""The runner counts what it saw fail, not what the result objects say (an outside review,
2026-12-05, docs/DECISIONS.md). Code under test shares the runner's process and reached a
pass in a few lines by editing the runner's *objects*: a ``failures`` list that drops what
is appended, a swapped ``_outcome.result``, pytest reports rewritten after they are made.
The runner now keeps its own ledger of the test parts that raised (from its guards on
unittest's test executor and pytest's ``call_runtest_hook``) and of the outcomes its own
result class was told, out of the result objects' reach; a failure the result did not
record is an error. Each attack here passed before the ledger."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import Supervised, run_supervised

from repo_files import write_files
from sandbox_supervisor import protocol

TEST = (
    "import unittest\nimport calc\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
    "    def test_zero(self):\n        self.assertEqual(calc.add(0, 0), 0)\n"
)
PYTEST_TEST = "import calc\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"
BUG = "def add(a, b):\n    return a - b\n"

UNITTEST_ATTACKS = {
    "no-op lists from TestResult.__init__": (
        "import unittest\n"
        "class _L(list):\n    def append(self, x): pass\n"
        "_o = unittest.TestResult.__init__\n"
        "def _i(self, *a, **k):\n"
        "    _o(self, *a, **k); self.failures = _L(); self.errors = _L()\n"
        "unittest.TestResult.__init__ = _i\n" + BUG
    ),
    "no-op lists on the result found by its frame": (
        "import sys\n"
        "class _L(list):\n    def append(self, x): pass\n"
        "def add(a, b):\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        result = frame.f_locals.get('result')\n"
        "        if result is not None and hasattr(result, 'failures'):\n"
        "            result.failures = _L(); result.errors = _L()\n"
        "        frame = frame.f_back\n"
        "    return a - b\n"
    ),
    "no-op lists on the result found by gc": (
        "import gc, unittest\n"
        "class _L(list):\n    def append(self, x): pass\n"
        "def add(a, b):\n"
        "    for thing in gc.get_objects():\n"
        "        if isinstance(thing, unittest.TestResult):\n"
        "            thing.failures = _L(); thing.errors = _L()\n"
        "    return a - b\n"
    ),
    "the outcome's result swapped for a dummy": (
        "import sys\n"
        "class _Dummy:\n"
        "    def __getattr__(self, name):\n        return lambda *a, **k: None\n"
        "def add(a, b):\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        test = frame.f_locals.get('self')\n"
        "        outcome = getattr(test, '_outcome', None)\n"
        "        if outcome is not None:\n"
        "            outcome.result = _Dummy()\n"
        "        frame = frame.f_back\n"
        "    return a - b\n"
    ),
    # the second review (2026-12-05): the guard read the flag when the part raised
    "the outcome's expecting_failure set from the test's frame": (
        "import sys\n"
        "def add(a, b):\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        outcome = getattr(frame.f_locals.get('self'), '_outcome', None)\n"
        "        if outcome is not None:\n"
        "            outcome.expecting_failure = True\n"
        "        frame = frame.f_back\n"
        "    return a - b\n"
    ),
    "test methods wrapped by a replaced __build_class__": (
        "import builtins\n"
        "_build = builtins.__build_class__\n"
        "def _quiet(f):\n"
        "    def run(*a, **k):\n"
        "        try:\n            f(*a, **k)\n"
        "        except Exception:\n            pass\n"
        "    return run\n"
        "def _b(func, name, *bases, **kw):\n"
        "    cls = _build(func, name, *bases, **kw)\n"
        "    for key, value in list(vars(cls).items()):\n"
        "        if key.startswith('test') and callable(value):\n"
        "            setattr(cls, key, _quiet(value))\n"
        "    return cls\n"
        "builtins.__build_class__ = _b\n" + BUG
    ),
}
UNITTEST_ATTACKS["the outcome's expecting_failure set before a subtest"] = UNITTEST_ATTACKS[
    "the outcome's expecting_failure set from the test's frame"
]  # the same code; the test runs it before a subtest (SUBTEST)

PYTEST_ATTACKS = {
    "TestReport.__init__ turns failed into passed": (
        "import _pytest.reports as r\n"
        "_o = r.TestReport.__init__\n"
        "def _i(self, *a, **k):\n"
        "    _o(self, *a, **k)\n"
        "    if self.outcome == 'failed':\n"
        "        self.outcome = 'passed'; self.longrepr = None\n"
        "r.TestReport.__init__ = _i\n" + BUG
    ),
    "BaseReport.failed is always False": (
        "import _pytest.reports as r\n"
        "r.BaseReport.failed = property(lambda self: False)\n"
        "r.BaseReport.passed = property(lambda self: True)\n" + BUG
    ),
    "a makereport hookwrapper registered on the Config found by gc": (
        "import gc, pytest\n"
        "from _pytest.config import Config\n"
        "class _P:\n"
        "    @pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        report = outcome.get_result()\n"
        "        if report.outcome == 'failed':\n"
        "            report.outcome = 'passed'; report.longrepr = None\n"
        "for thing in gc.get_objects():\n"
        "    if isinstance(thing, Config):\n"
        "        thing.pluginmanager.register(_P(), 'hidden')\n" + BUG
    ),
    "a clean call planted inside the test, reports rewritten": (
        "import _pytest.reports as r\n"
        "from _pytest.runner import CallInfo\n"
        "_o = r.TestReport.__init__\n"
        "def _i(self, *a, **k):\n"
        "    _o(self, *a, **k)\n"
        "    if self.outcome == 'failed':\n"
        "        self.outcome = 'passed'; self.longrepr = None\n"
        "r.TestReport.__init__ = _i\n"
        "def add(a, b):\n"
        "    CallInfo.from_call(lambda: None, when='call')\n"
        "    return a - b\n"
    ),
}


def _run(repo: Path, runner: str) -> Supervised:
    argv = [sys.executable, "-I", "-B", "-m", "sandbox_supervisor.run_tests", runner]
    return run_supervised("", argv=argv, cwd=repo, deadline_s=60)


def _report(run: Supervised) -> dict[str, Any]:
    report: dict[str, Any] | None = run.exit_report["runner_report"]
    assert report is not None, run.data(protocol.KIND_STDERR)
    return report


SUBTEST = (
    "import unittest\nimport calc\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        got = calc.add(2, 3)\n"
    "        with self.subTest(case=1):\n            self.assertEqual(got, 5)\n"
)


@pytest.mark.parametrize("name", list(UNITTEST_ATTACKS))
def test_unittest_failures_hidden_from_the_result_still_fail(tmp_path: Path, name: str) -> None:
    test = SUBTEST if "subtest" in name else TEST
    repo = write_files(tmp_path, {"calc.py": UNITTEST_ATTACKS[name], "test_calc.py": test})
    run = _run(repo, "unittest")
    report = _report(run)
    assert run.exit_code == 1, name
    assert report["failures"] + report["errors"] >= 1, (name, report)


@pytest.mark.parametrize("name", list(PYTEST_ATTACKS))
def test_pytest_failures_rewritten_in_reports_still_fail(tmp_path: Path, name: str) -> None:
    repo = write_files(tmp_path, {"calc.py": PYTEST_ATTACKS[name], "test_calc.py": PYTEST_TEST})
    run = _run(repo, "pytest")
    report = _report(run)
    assert run.exit_code == 1, name
    assert report["failures"] + report["errors"] >= 1, (name, report)


def test_honest_suites_count_as_before(tmp_path: Path) -> None:
    """Expected failures, skips, subtests and a failing setUp keep unittest's counts."""
    suite = (
        "import unittest\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_ok(self): pass\n"
        "    @unittest.expectedFailure\n    def test_expected(self): self.fail('known')\n"
        "    @unittest.skip('later')\n    def test_later(self): pass\n"
        "    def test_skips_itself(self): self.skipTest('not here')\n"
        "    def test_subtests(self):\n"
        "        for i in range(3):\n"
        "            with self.subTest(i=i):\n                self.assertLess(i, 1)\n"
        "class S(unittest.TestCase):\n"
        "    def setUp(self): raise OSError('no disk')\n"
        "    def test_never(self): pass\n"
    )
    run = _run(write_files(tmp_path, {"test_h.py": suite}), "unittest")
    report = _report(run)
    assert (report["tests_run"], report["failures"], report["errors"], report["skipped"]) == (
        6,
        2,
        1,
        2,
    )
    assert b"not recorded" not in run.data(protocol.KIND_STDERR)
    pytest_suite = (
        "import pytest\n"
        "def test_ok(): pass\n"
        "@pytest.mark.xfail\ndef test_known(): assert False\n"
        "def test_skip(): pytest.skip('no')\n"
        "def test_bad(): assert False\n"
    )
    run = _run(write_files(tmp_path / "p", {"test_p.py": pytest_suite}), "pytest")
    report = _report(run)
    assert (report["tests_run"], report["failures"], report["errors"], report["skipped"]) == (
        4,
        1,
        0,
        2,
    )
    assert b"not recorded" not in run.data(protocol.KIND_STDERR)


def test_unittest_cases_under_pytest_keep_their_skips(tmp_path: Path) -> None:
    """pytest runs a ``TestCase`` through unittest's executor (where the unittest guard
    sits) and reports it under its node id: only pytest's own account counts then."""
    suite = (
        "import unittest\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_ok(self): pass\n"
        "    def test_skips_itself(self): self.skipTest('not here')\n"
        "    @unittest.expectedFailure\n    def test_expected(self): self.fail('known')\n"
    )
    run = _run(write_files(tmp_path, {"test_u.py": suite, "conftest.py": ""}), "pytest")
    assert run.exit_code == 0, run.data(protocol.KIND_STDERR)
    assert b"not told" not in run.data(protocol.KIND_STDERR)


@pytest.mark.docker
@pytest.mark.parametrize(
    ("runner", "name"),
    [
        ("unittest", "no-op lists from TestResult.__init__"),
        ("unittest", "the outcome's result swapped for a dummy"),
        ("unittest", "the outcome's expecting_failure set from the test's frame"),
        ("pytest", "TestReport.__init__ turns failed into passed"),
        ("pytest", "a makereport hookwrapper registered on the Config found by gc"),
    ],
)
def test_in_the_sandbox_a_forged_suite_does_not_succeed(
    tmp_path: Path, runner: str, name: str
) -> None:
    """The review's route, end to end with the image's own pytest: the repository ships
    the forgery, the plan changes nothing, and the run must not succeed."""
    from sandbox_agent.controller import RunConfig, run_task
    from sandbox_agent.providers.options import PlanOptions

    attacks = UNITTEST_ATTACKS if runner == "unittest" else PYTEST_ATTACKS
    test = TEST if runner == "unittest" else PYTEST_TEST
    files = {"calc.py": attacks[name], "test_calc.py": test}
    if runner == "pytest":
        files["conftest.py"] = ""
    repo = write_files(tmp_path / "repo", files)
    plan = tmp_path / "plan.json"
    plan.write_text('{"steps": [{"tool": "run_tests", "args": {}}, '
                    '{"tool": "finish", "args": {"summary": "passes"}}]}')  # fmt: skip
    result = run_task(
        RunConfig(
            task="fix add",
            repo=repo,
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="tools",
            trace_dir=tmp_path / "runs",
        )
    )
    assert result.status == "FAILED", (name, result.reason)
    assert result.final_tests is not None
    assert not result.final_tests.passed
