"""The adversarial report counts passes, failures, skips and xfails apart; a skip is no pass."""

from __future__ import annotations

# ruff: noqa: E501 - junit XML sample lines
from devtools.assurance.adversarial_report import AdversarialReport, parse_junit, render, tally

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.sandbox.test_a" name="test_pass" time="0.1"/>
<testcase classname="tests.sandbox.test_a" name="test_fail"><failure message="assert 0">x</failure></testcase>
<testcase classname="tests.sandbox.test_a" name="test_skip[runsc]"><skipped type="pytest.skip" message="no runsc"/></testcase>
<testcase classname="tests.assurance.test_b" name="test_hole"><skipped type="pytest.xfail" message="open finding"/></testcase>
<testcase classname="tests.assurance.test_b.TestC" name="test_fixed"><failure message="[XPASS(strict)] open finding"/></testcase>
<testcase classname="tests.assurance.test_b" name="test_err"><error message="fixture failed"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_are_counted_apart() -> None:
    cases = parse_junit(JUNIT)
    assert [(case.nodeid, case.outcome) for case in cases] == [
        ("tests/sandbox/test_a.py::test_pass", "passed"),
        ("tests/sandbox/test_a.py::test_fail", "failed"),
        ("tests/sandbox/test_a.py::test_skip[runsc]", "skipped"),
        ("tests/assurance/test_b.py::test_hole", "xfailed"),
        ("tests/assurance/test_b.py::TestC::test_fixed", "xpassed"),
        ("tests/assurance/test_b.py::test_err", "error"),
    ]
    rows = {row.suite: row for row in tally(cases, ["tests/sandbox", "tests/assurance"])}
    sandbox = rows["tests/sandbox"]
    assert (sandbox.passed, sandbox.failed, sandbox.skipped) == (1, 1, 1)
    assurance = rows["tests/assurance"]
    assert (assurance.xfailed, assurance.xpassed, assurance.error, assurance.passed) == (1, 1, 1, 0)


def test_the_page_lists_skips_apart_from_passes() -> None:
    cases = parse_junit(JUNIT)
    report = AdversarialReport(
        generated="now", commit="abc", suites=tally(cases, ["tests/sandbox"]), cases=cases
    )
    page = render(report)
    assert "A skip is never a pass" in page
    assert "| **all** | | 6 | 1 | 1 | 1 | 1 | 1 | 1 |" in page
    skipped = page.split("## Skipped (not passes)")[1].split("##")[0]
    assert "test_skip[runsc]" in skipped
    assert "no runsc" in skipped
