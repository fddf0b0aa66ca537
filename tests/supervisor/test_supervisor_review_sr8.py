"""SR-8 (issue 20), PID 1's side: the runner report with test ids, strict and bounded, and
the trusted runner's collect-only mode and pytest options.

The parser's property test feeds huge and odd numbers to every field (C8-3).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from supervisor_helpers import Supervised, run_supervised

from repo_files import write_files
from sandbox_supervisor.run_tests import short_id
from sandbox_supervisor.runner_report import (
    MAX_COUNT,
    MAX_TEST_ID_CHARS,
    MAX_TEST_IDS,
    parse_runner_report,
)

GOOD = {
    "runner": "pytest",
    "tests_run": 1,
    "failures": 0,
    "errors": 0,
    "skipped": 0,
    "mode": "run",
    "ids": ["t.py::a"],
    "broken": [],
    "skipped_ids": [],
}
ODD_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**9, max_value=10**4299),
    st.sampled_from([-1, 0, 10**9, 10**9 + 1, 2**63, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(GOOD)), number=ODD_NUMBERS)
def test_c8_3_pid1_parses_any_number_into_a_bounded_report_or_a_reason(
    key: str, number: Any
) -> None:
    report, why = parse_runner_report(_encode({**GOOD, key: number}), overflow=False)
    assert (report is None) != (why is None)
    if report is not None:
        for count in ("tests_run", "failures", "errors", "skipped"):
            assert 0 <= report[count] <= MAX_COUNT
            assert not isinstance(report[count], bool)


@pytest.mark.parametrize("digits", [4300, 4301, 50_000])
def test_c8_3_pid1_refuses_counts_past_the_cap_and_the_digit_limit(digits: int) -> None:
    data = json.dumps(GOOD).replace('"tests_run": 1', f'"tests_run": {"9" * digits}').encode()
    report, why = parse_runner_report(data, overflow=False)
    assert report is None
    assert why is not None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"ids": None, "mode": "collect", "skipped_ids": None}, None),
        ({"ids": None, "mode": "collect"}, "skipped_ids must be null exactly when ids is"),
        ({"skipped_ids": None}, "skipped_ids must be null exactly when ids is"),
        ({"skipped_ids": [""]}, "skipped_ids"),
        ({"mode": "later"}, "mode"),
        ({"ids": "t.py::a"}, "ids"),
        ({"ids": [""]}, "ids"),
        ({"ids": ["x" * (MAX_TEST_ID_CHARS + 1)]}, "ids"),
        ({"ids": ["x"] * (MAX_TEST_IDS + 1)}, "ids"),
        ({"ids": [1]}, "ids"),
        ({"broken": None}, "broken"),
        ({"runner": "judge"}, "ids are required"),
    ],
)
def test_c8_1_ids_are_checked_strictly(change: dict[str, Any], fragment: str | None) -> None:
    report, why = parse_runner_report(_encode({**GOOD, **change}), overflow=False)
    if fragment is None:
        assert why is None
        return
    assert report is None
    assert why is not None
    assert fragment in why


def test_c8_1_a_counts_only_report_is_a_judges_only() -> None:
    counts = {k: GOOD[k] for k in ("tests_run", "failures", "errors", "skipped")}
    assert parse_runner_report(_encode({"runner": "judge", **counts}), overflow=False)[0]
    report, why = parse_runner_report(_encode({"runner": "unittest", **counts}), overflow=False)
    assert report is None
    assert why is not None


def test_c8_1_a_long_id_is_shortened_the_same_way_every_time() -> None:
    long = "t.py::test[" + "x" * 5000 + "]"
    assert short_id(long) == short_id(long)
    assert len(short_id(long)) <= MAX_TEST_ID_CHARS
    assert short_id(long) != short_id(long + "y")
    assert short_id("t.py::a") == "t.py::a"


def _run(repo: Path, *args: str) -> Supervised:
    argv = [sys.executable, "-I", "-B", "-m", "sandbox_supervisor.run_tests", *args]
    return run_supervised("", argv=argv, cwd=repo, deadline_s=60)


def test_c8_1_collect_only_runs_nothing_and_lists_ids_and_broken_modules(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/test_a.py": (
                "import unittest\nclass T(unittest.TestCase):\n"
                "    def test_x(self):\n        raise SystemExit('ran')\n"
            ),
            "tests/test_b.py": "import missing_module\n",
        },
    )
    run = _run(repo, "unittest", "--collect-only")
    report = run.exit_report["runner_report"]
    assert report["mode"] == "collect"
    assert report["ids"] == ["tests.test_a.T.test_x"]
    assert report["broken"] == ["tests.test_b"]
    assert report["tests_run"] == 0
    assert b"ran" not in run.data()


def test_c8_1_pytest_collects_no_text_doctest_unless_configured(tmp_path: Path) -> None:
    files = {
        "conftest.py": "",
        "test_ok.txt": ">>> 1 + 1\n2\n",
        "test_a.py": "def test_a(): pass\n",
    }
    run = _run(write_files(tmp_path / "plain", files), "pytest", "--collect-only")
    assert run.exit_report["runner_report"]["ids"] == ["test_a.py::test_a"]
    configured = {**files, "pytest.ini": "[pytest]\naddopts = --doctest-glob=test*.txt\n"}
    run = _run(write_files(tmp_path / "configured", configured), "pytest", "--collect-only")
    assert run.exit_report["runner_report"]["ids"] == [
        "test_a.py::test_a",
        "test_ok.txt::test_ok.txt",
    ]


def test_c8_1_pytest_reports_the_ids_that_ran_and_the_broken_collectors(tmp_path: Path) -> None:
    passing = "import pytest\ndef test_a(): pass\n@pytest.mark.skip\ndef test_s(): pass\n"
    repo = write_files(tmp_path / "ran", {"conftest.py": "", "test_a.py": passing})
    report = _run(repo, "pytest").exit_report["runner_report"]
    assert report["mode"] == "run"
    assert report["ids"] == ["test_a.py::test_a", "test_a.py::test_s"]
    broken = {"conftest.py": "", "test_a.py": passing, "test_b.py": "import missing_module\n"}
    report = _run(write_files(tmp_path / "broken", broken), "pytest").exit_report["runner_report"]
    assert report["broken"] == ["test_b.py"]
    assert report["ids"] == []  # pytest runs nothing after a collection error
