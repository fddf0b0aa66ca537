"""The trusted runner wrapper: ``python3 -I -B -m sandbox_supervisor.run_tests RUNNER [SELECTOR]``.

Run with cwd ``/workspace``. ``-I`` keeps the repository off ``sys.path`` while this
module and the runner are imported (a ``sandbox_supervisor`` or ``pytest`` folder in
the repository cannot replace them); the repository is then put at ``sys.path[0]``
as ``python -m unittest`` would. Counts come from the runner's own API, never from
its printed output, and go to fd 3 as one JSON object (see ``runner_report``).

A test that calls ``os._exit`` or kills its process leaves no report: the host reads
that as "not passed". Exit 0 only when at least one test ran and none failed.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import unittest
from typing import Any

from sandbox_supervisor import deps, protocol
from sandbox_supervisor.tripwire import Snapshot

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
RUNNERS = ("unittest", "pytest")
UNITTEST_PATTERN = "test*.py"
"""What unittest discovery loads as test modules; the host's policy protects the same."""


def _counts(
    runner: str, tests_run: int, failures: int, errors: int, skipped: int
) -> dict[str, Any]:
    return {
        "runner": runner,
        "tests_run": tests_run,
        "failures": failures,
        "errors": errors,
        "skipped": skipped,
    }


def run_unittest(root: str, selector: str | None) -> tuple[dict[str, Any], bool]:
    """Discover (``test*.py`` from ``root``) or load ``selector``; the counts and the verdict."""
    loader = unittest.TestLoader()
    try:
        if selector is None:
            suite = loader.discover(start_dir=root, pattern=UNITTEST_PATTERN, top_level_dir=root)
        else:
            suite = loader.loadTestsFromName(selector)
    except Exception as error:  # a bad selector or an import error while loading
        print(f"run_tests: cannot load tests: {type(error).__name__}: {error}", file=sys.stderr)
        return _counts("unittest", 0, 0, 1, 0), False
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    failures = len(result.failures) + len(result.unexpectedSuccesses)
    errors = len(result.errors)  # a load error is also a failed test in the suite
    counts = _counts("unittest", result.testsRun, failures, errors, len(result.skipped))
    return counts, result.wasSuccessful() and not loader.errors


class PytestCounter:
    """A pytest plugin object counting test reports as pytest makes them."""

    def __init__(self) -> None:
        self.tests_run = 0
        self.failures = 0
        self.errors = 0
        self.skipped = 0

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Setup counts a test that never reaches call; failures outside call are errors."""
        if report.when == "call":
            self.tests_run += 1
            self.failures += int(report.failed)
            self.skipped += int(report.skipped)
        elif report.when == "setup" and not report.passed:
            self.tests_run += 1
            self.errors += int(report.failed)
            self.skipped += int(report.skipped)
        elif report.when == "teardown":
            self.errors += int(report.failed)

    def pytest_collectreport(self, report: Any) -> None:
        """A module that cannot be collected is an error."""
        self.errors += int(report.failed)


def run_pytest(selector: str | None) -> tuple[dict[str, Any], bool]:
    """``pytest -p no:cacheprovider -q [selector]`` in-process; the counts and the verdict."""
    import pytest

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    counter = PytestCounter()
    args = ["-p", "no:cacheprovider", "-q", *([selector] if selector else [])]
    code = pytest.main(args, plugins=[counter])
    counts = _counts("pytest", counter.tests_run, counter.failures, counter.errors, counter.skipped)
    return counts, code == pytest.ExitCode.OK


def write_report(fd: int | None, counts: dict[str, Any]) -> None:
    """The report as one JSON object on ``fd``, when that is the report pipe."""
    if fd is None:
        return
    data = json.dumps(counts, sort_keys=True).encode()
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as error:
        print(f"run_tests: cannot write the runner report: {error}", file=sys.stderr)


def _take_report_fd() -> int | None:
    """Move the report pipe off fd 3 (not inherited by the tests' own subprocesses)."""
    try:
        if not stat.S_ISFIFO(os.fstat(protocol.RUNNER_REPORT_FD).st_mode):
            return None
    except OSError:
        return None
    fd = os.dup(protocol.RUNNER_REPORT_FD)
    os.close(protocol.RUNNER_REPORT_FD)
    return fd


def main(argv: list[str] | None = None) -> int:
    """Run the suite, write the report, and return the exit code."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in RUNNERS or len(args) > 2:
        print(f"usage: run_tests {{{'|'.join(RUNNERS)}}} [SELECTOR]", file=sys.stderr)
        return EXIT_USAGE
    runner, selector = args[0], (args[1] if len(args) == 2 else None)
    report_fd = _take_report_fd()
    root = os.getcwd()
    if runner == "pytest":
        import pytest  # noqa: F401  # imported before the repository is on sys.path
    snapshot = Snapshot.take(runner)  # before any repository code is imported
    sys.path.insert(0, root)
    deps.add_to_path(sys.path, sys.modules)  # the environment, with the repository (issue 17)
    counts, passed = run_pytest(selector) if runner == "pytest" else run_unittest(root, selector)
    tampered = snapshot.changed()
    if tampered:
        print(
            f"run_tests: code under test replaced the runner: {', '.join(tampered)}",
            file=sys.stderr,
        )
        counts["errors"] += 1
        passed = False
    write_report(report_fd, counts)
    ok = passed and counts["tests_run"] >= 1 and counts["failures"] == counts["errors"] == 0
    return EXIT_PASSED if ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
