"""The trusted runner wrapper: ``python3 -I -B -m sandbox_supervisor.run_tests RUNNER [SELECTOR]``.

``RUNNER --collect-only`` collects the suite and runs nothing: the host's baseline of
the original tree's test ids (issue 20, SR-8 C8-1). ``RUNNER --spectrum`` runs the suite
and prints which functions the failing tests ran (``spectrum``: a localisation hint).

Run with cwd ``/workspace``. ``-I`` keeps the repository off ``sys.path`` while this
module and the runner are imported (a ``sandbox_supervisor`` or ``pytest`` folder in
the repository cannot replace them); the repository is then put at ``sys.path[0]``
as ``python -m unittest`` would. Counts come from the runner's own API, never from
its printed output, and go to fd 3 as one JSON object (see ``runner_report``), with the
ids of the tests that ran (or, collecting, were collected).

pytest runs with ``--doctest-glob`` set to a pattern no file name matches, which replaces
its default ``test*.txt``: a text file the model writes is never a test unless the
repository's own configuration names a doctest glob (SR-8 C8-1).

A test that calls ``os._exit`` or kills its process leaves no report: the host reads
that as "not passed". Exit 0 only when at least one test ran and none failed.

unittest's own stop signal (``unittest.case._ShouldStop``), which its ``testPartExecutor``
swallows and counts as success, is an error when code under test raises it: only
``subTest`` raises it legitimately, after a recorded failure (``failfast``) or an expected
one (``outcomes.guard_unittest``; SR-13's retest, R1). A skip inside a ``subTest`` is
reported as its test's skip (R2).

Failures, errors and skips are counted by the runner's own result class and report hook
into a ``outcomes.Ledger``, never read back from the result's lists, and a test its guards
saw fail that no failure was told for is an error (``outcomes``: an outside review's
forgeries edited the result objects).
"""

from __future__ import annotations

import hashlib
import os
import sys
import unittest
from collections.abc import Iterator
from typing import Any

from sandbox_supervisor import asserts, deps
from sandbox_supervisor.outcomes import Ledger, guard_pytest, guard_unittest
from sandbox_supervisor.runner_report import (
    MAX_TEST_ID_CHARS,
    take_report_fd,
    write_report,
)
from sandbox_supervisor.spectrum import SPECTRUM_ARG, Spectrum, spectrum_for, tracing
from sandbox_supervisor.tripwire import Snapshot

__unittest = True
"""unittest's mark of its own modules: a failure's traceback keeps no frame of them. The
runner's guard around unittest's test executor (``outcomes``, marked too) is a frame in
every failure's traceback; unmarked, unittest cut an assertion failure's traceback at
that frame, before the test's own line, and the repair strategy could not tell which
test failed or where."""

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
RUNNERS = ("unittest", "pytest")
UNITTEST_PATTERN = "test*.py"
"""What unittest discovery loads as test modules; the host's policy protects the same."""
COLLECT_ONLY = "--collect-only"
"""The second argument that makes this a collect-only run (a selector never starts so)."""
NO_TEXT_DOCTESTS = "[!\x01-\U0010ffff]"
"""A ``--doctest-glob`` no file name matches (it matches NUL only, which no name holds).
Given on the command line it replaces pytest's default ``test*.txt``; a glob of the
repository's own ``addopts`` still adds to it."""
FAILED_TEST = ("unittest.loader", "_FailedTest")
"""What unittest puts in a suite for a module it could not import."""


def _counts(
    runner: str,
    tests_run: int,
    failures: int,
    errors: int,
    skipped: int,
    *,
    mode: str = "run",
    ids: list[str] | None = None,
    broken: list[str] | None = None,
    skipped_ids: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "runner": runner,
        "tests_run": tests_run,
        "failures": failures,
        "errors": errors,
        "skipped": skipped,
        "mode": mode,
        "ids": ids,
        "broken": broken or [],
        "skipped_ids": None if ids is None else (skipped_ids or []),
    }


def _test_of(test: Any) -> Any:
    """A subtest's own test (its skip is the test's skip), else ``test``."""
    return getattr(test, "test_case", test) if isinstance(test, unittest.case._SubTest) else test  # type: ignore[attr-defined]


def short_id(test_id: str) -> str:
    """``test_id``, or a shortened form of it (prefix and digest) when it is too long for
    the report: the same on every run, so the host can still compare."""
    if len(test_id) <= MAX_TEST_ID_CHARS:
        return test_id
    digest = hashlib.sha256(test_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{test_id[: MAX_TEST_ID_CHARS - 80]}...sha256:{digest}"


def _tests(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _tests(test)
        else:
            yield test


def _is_failed_import(test: unittest.TestCase) -> bool:
    return (type(test).__module__, type(test).__qualname__) == FAILED_TEST


def _recording(
    ran: list[str], ledger: Ledger, spectrum: Spectrum | None = None
) -> type[unittest.TextTestResult]:
    """A result class that records the id of every test that starts (ran, failed, errored
    or was skipped) in ``ran``, tells ``ledger`` every outcome it is given, and starts and
    stops ``spectrum``'s record of each test."""

    def told(test: Any, outcome: str) -> None:
        ledger.told(short_id(_test_of(test).id()), outcome)

    class Recording(unittest.TextTestResult):
        def startTest(self, test: unittest.TestCase) -> None:
            ran.append(short_id(test.id()))
            if spectrum is not None:
                spectrum.start(ran[-1])
            super().startTest(test)

        def stopTest(self, test: unittest.TestCase) -> None:
            super().stopTest(test)
            if spectrum is not None:
                spectrum.stop()

        def addSuccess(self, test: unittest.TestCase) -> None:
            told(test, "success")
            super().addSuccess(test)

        def addFailure(self, test: unittest.TestCase, err: Any) -> None:
            told(test, "failure")
            detail = asserts.explain(err[1], err[2])
            if detail is not None:  # what a bare assert compared (pytest shows it too)
                err = (err[0], AssertionError(detail), err[2])
            super().addFailure(test, err)

        def addError(self, test: unittest.TestCase, err: Any) -> None:
            told(test, "error")
            super().addError(test, err)

        def addSkip(self, test: unittest.TestCase, reason: str) -> None:
            told(test, "skip")
            super().addSkip(test, reason)

        def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
            told(test, "expected")
            super().addExpectedFailure(test, err)

        def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
            told(test, "failure")
            super().addUnexpectedSuccess(test)

        def addSubTest(self, test: unittest.TestCase, subtest: Any, err: Any) -> None:
            if err is not None:
                told(test, "failure" if issubclass(err[0], test.failureException) else "error")
            super().addSubTest(test, subtest, err)

    return Recording


def run_unittest(
    root: str,
    selector: str | None,
    *,
    collect: bool = False,
    ledger: Ledger | None = None,
    spectrum: Spectrum | None = None,
) -> tuple[dict[str, Any], bool]:
    """Discover (``test*.py`` from ``root``) or load ``selector``; the counts and the verdict.

    ``collect``: run nothing; the report lists the ids discovered, and as ``broken`` the
    modules that could not be imported. ``ledger``: the run's own account (``outcomes``),
    which the counts come from.
    """
    ledger = ledger or Ledger()
    loader = unittest.TestLoader()
    mode = "collect" if collect else "run"
    try:
        if selector is None:
            suite = loader.discover(start_dir=root, pattern=UNITTEST_PATTERN, top_level_dir=root)
        else:
            suite = loader.loadTestsFromName(selector)
    except Exception as error:  # a bad selector or an import error while loading
        print(f"run_tests: cannot load tests: {type(error).__name__}: {error}", file=sys.stderr)
        return _counts("unittest", 0, 0, 1, 0, mode=mode, ids=[]), False
    if collect:
        found = list(_tests(suite))
        broken = [test._testMethodName for test in found if _is_failed_import(test)]
        ids = [short_id(test.id()) for test in found if not _is_failed_import(test)]
        return _counts("unittest", 0, 0, 0, 0, mode=mode, ids=ids, broken=broken), True
    ran: list[str] = []
    recording = _recording(ran, ledger, spectrum)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1, resultclass=recording)
    with tracing(spectrum):
        runner.run(suite)
    # failed: failures and unexpected successes; errors: a load error is a failed test too
    counts = _counts(
        "unittest",
        len(ran),
        ledger.failures,
        ledger.errors,
        ledger.skips,
        ids=ran,
        skipped_ids=list(ledger.skipped_ids),
    )
    return counts, ledger.failures == ledger.errors == 0 and not loader.errors


class PytestCounter:
    """A pytest plugin object counting test reports as pytest makes them."""

    def __init__(self, ledger: Ledger | None = None, spectrum: Spectrum | None = None) -> None:
        self.ledger = ledger or Ledger()
        self.spectrum = spectrum
        self.tests_run = 0
        self.failures = 0
        self.errors = 0
        self.skipped = 0
        self.ran: list[str] = []
        self.skipped_ids: list[str] = []
        """Skipped or expected to fail (``xfail``): pytest reports both as skipped."""
        self.collected: list[str] = []
        self.broken: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Setup counts a test that never reaches call; failures outside call are errors.
        Read from the report's ``outcome`` string, not its ``failed``/``passed``
        properties (a class attribute code under test can replace), and told to the
        ledger (``outcomes``)."""
        outcome = report.outcome
        test_id = short_id(report.nodeid)
        if report.when == "call":
            self.tests_run += 1
            self.failures += outcome == "failed"
            self._ran(report, outcome, "failure")
        elif report.when == "setup" and outcome != "passed":
            self.tests_run += 1
            self.errors += outcome == "failed"
            self._ran(report, outcome, "error")
        elif report.when == "teardown" and outcome == "failed":
            self.errors += 1
            self.ledger.told(test_id, "error")

    def _ran(self, report: Any, outcome: str, failed_as: str) -> None:
        test_id = short_id(report.nodeid)
        self.ran.append(test_id)
        if outcome == "skipped":
            self.skipped += 1
            self.skipped_ids.append(test_id)
        xfail = outcome == "skipped" and hasattr(report, "wasxfail")
        told = {"failed": failed_as, "skipped": "xfail" if xfail else "skip"}
        self.ledger.told(test_id, told.get(outcome, "success"))

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.spectrum is not None:
            self.spectrum.start(short_id(nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.spectrum is not None:
            self.spectrum.stop()

    def pytest_collectreport(self, report: Any) -> None:
        """A module that cannot be collected is an error."""
        self.errors += int(report.failed)
        if report.failed:
            self.broken.append(short_id(report.nodeid or "."))

    def pytest_collection_finish(self, session: Any) -> None:
        self.collected = [short_id(item.nodeid) for item in session.items]


def run_pytest(
    selector: str | None,
    *,
    collect: bool = False,
    ledger: Ledger | None = None,
    spectrum: Spectrum | None = None,
) -> tuple[dict[str, Any], bool]:
    """``pytest -p no:cacheprovider -q --doctest-glob NO_TEXT_DOCTESTS [selector]``
    in-process (``--collect-only`` too when ``collect``); the counts and the verdict."""
    import pytest

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    counter = PytestCounter(ledger, spectrum)
    args = ["-p", "no:cacheprovider", "-q", f"--doctest-glob={NO_TEXT_DOCTESTS}"]
    args += ["--collect-only"] if collect else [*([selector] if selector else [])]
    with tracing(spectrum):
        code = pytest.main(args, plugins=[counter])
    if collect:
        counts = _counts(
            "pytest", 0, 0, 0, 0, mode="collect", ids=counter.collected, broken=counter.broken
        )
        return counts, code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    counts = _counts(
        "pytest",
        counter.tests_run,
        counter.failures,
        counter.errors,
        counter.skipped,
        ids=counter.ran,
        broken=counter.broken,
        skipped_ids=counter.skipped_ids,
    )
    return counts, code == pytest.ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """Run the suite, write the report, and return the exit code."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in RUNNERS or len(args) > 2:
        print(f"usage: run_tests {{{'|'.join(RUNNERS)}}} [SELECTOR]", file=sys.stderr)
        return EXIT_USAGE
    runner, selector = args[0], (args[1] if len(args) == 2 else None)
    collect = selector == COLLECT_ONLY
    spectrum = spectrum_for(os.getcwd()) if selector == SPECTRUM_ARG else None
    selector = None if collect or spectrum is not None else selector
    report_fd = take_report_fd()
    root = os.getcwd()
    if runner == "pytest":
        import pytest  # noqa: F401  # imported before the repository is on sys.path
    ledger = Ledger()
    # pytest runs a TestCase through unittest's executor too, and names it by its node id:
    # then only pytest's guard feeds the ledger (the unittest guard still refuses stops)
    unittest_ledger = ledger if runner == "unittest" else Ledger()
    guard_unittest(unittest_ledger, lambda test: short_id(_test_of(test).id()))
    if runner == "pytest":
        guard_pytest(ledger, short_id)
    snapshot = Snapshot.take(runner)  # before any repository code is imported
    sys.path.insert(0, root)
    deps.add_to_path(sys.path, sys.modules)  # the environment, with the repository (issue 17)
    if runner == "pytest":
        counts, passed = run_pytest(selector, collect=collect, ledger=ledger, spectrum=spectrum)
    else:
        counts, passed = run_unittest(
            root, selector, collect=collect, ledger=ledger, spectrum=spectrum
        )
    if spectrum is not None:
        print(spectrum.line(ledger.failing()), file=sys.stderr)
    if silenced := ledger.silenced():
        shown = ", ".join(silenced[:5])
        print(
            f"run_tests: {len(silenced)} tests failed or skipped but the result was not told "
            f"(code under test edited the runner's objects): {shown}",
            file=sys.stderr,
        )
        counts["errors"] += len(silenced)
        passed = False
    tampered = snapshot.changed()
    if tampered:
        print(
            f"run_tests: code under test replaced the runner: {', '.join(tampered)}",
            file=sys.stderr,
        )
        counts["errors"] += 1
        passed = False
    write_report(report_fd, counts)
    if collect:
        return EXIT_PASSED if passed else EXIT_FAILED
    ok = passed and counts["tests_run"] >= 1 and counts["failures"] == counts["errors"] == 0
    return EXIT_PASSED if ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
