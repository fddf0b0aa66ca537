"""``run_tests RUNNER --spectrum``: which functions the failing tests ran, most suspicious
first (Ochiai), on one line of stderr the host reads as a hint."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import Supervised, run_supervised

from repo_files import write_files
from sandbox_supervisor import protocol
from sandbox_supervisor.spectrum import MARK

LIB = (
    "def helper(x):\n    return x\n\n\n"
    "def good(x):\n    return helper(x) + 1\n\n\n"
    "def bad(x):\n    return helper(x) - 1  # the bug\n\n\n"
    "def unused():\n    return 0\n"
)
UNITTEST_SUITE = (
    "import unittest\nimport lib\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_good(self):\n        self.assertEqual(lib.good(1), 2)\n"
    "    def test_good_again(self):\n        self.assertEqual(lib.good(2), 3)\n"
    "    def test_bad(self):\n        self.assertEqual(lib.bad(1), 2)\n"
)
PYTEST_SUITE = (
    "import lib\n\n"
    "def test_good():\n    assert lib.good(1) == 2\n\n"
    "def test_good_again():\n    assert lib.good(2) == 3\n\n"
    "def test_bad():\n    assert lib.bad(1) == 2\n"
)


def _run(repo: Path, runner: str, *extra: str) -> Supervised:
    argv = [sys.executable, "-I", "-B", "-m", "sandbox_supervisor.run_tests", runner, *extra]
    return run_supervised("", argv=argv, cwd=repo, deadline_s=60)


def _spectrum(run: Supervised) -> dict[str, Any]:
    lines = [
        line
        for line in run.data(protocol.KIND_STDERR).decode().splitlines()
        if line.startswith(MARK)
    ]
    assert len(lines) == 1, run.data().decode()
    spectrum: dict[str, Any] = json.loads(lines[0].removeprefix(MARK))
    return spectrum


@pytest.mark.parametrize(
    ("runner", "suite"), [("unittest", UNITTEST_SUITE), ("pytest", PYTEST_SUITE)]
)
def test_the_failing_tests_functions_come_first(tmp_path: Path, runner: str, suite: str) -> None:
    repo = write_files(tmp_path, {"lib.py": LIB, "test_lib.py": suite})
    run = _run(repo, runner, "--spectrum")
    assert run.exit_code == 1  # the suite ran as always: one test fails
    report = run.exit_report["runner_report"]
    assert (report["tests_run"], report["failures"]) == (3, 1)
    spectrum = _spectrum(run)
    assert (spectrum["failed"], spectrum["passed"]) == (1, 2)
    # bad: run by the failing test only; helper by all three; good and unused: by no
    # failing test, so not listed; the test module itself never is
    assert spectrum["functions"] == [["lib.py", 9, 1, 0], ["lib.py", 1, 1, 2]]


def test_a_plain_run_prints_no_spectrum(tmp_path: Path) -> None:
    repo = write_files(tmp_path, {"lib.py": LIB, "test_lib.py": UNITTEST_SUITE})
    run = _run(repo, "unittest")
    assert MARK.encode() not in run.data()
