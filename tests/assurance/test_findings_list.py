"""docs/findings.toml agrees with the review: every finding of docs/SECURITY_REVIEW.md and
docs/review/SR-*.md (but informational ones) has an entry, every entry names a finding
there, its commits are in order, and its tests exist and would run here (a fixed
finding's as plain tests, an open one's as strict xfails). The README's line about
docs/REGRESSION_EVIDENCE.md states what the page states."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools.assurance import regression_render
from devtools.assurance.findings import (
    FINDINGS_FILE,
    Finding,
    ReviewFinding,
    commit_problems,
    load,
    parse_review,
    problems,
    review_findings,
)
from sandbox_agent.errors import UsageError
from sandbox_agent.settings import PROJECT_ROOT

REVIEW = """\
# Security review

## SR-1. Something was not protected (fixed)

- **Test**: `tests/x.py::test_y`

## SR-2. Code under test fakes a pass (mitigated; residual risk stays)

## SR-3. A review of the forked runner

- **G1 (high; runsc only): the workload reaches PID 1.** **Fixed**: ... **Still open**: ...
- **F1 (low, accepted): secrets.** Strict xfail.
- **I1 (informational, fixed): a detail.**
- **Checked and holding**: everything else; **Residual (documented, T-44):** some.

### Details

- **F2 (medium, open): found in a sub-section.**

## Probed and holding

- **F9 (high, open): not a finding of any section.**
"""

PASSING = "tests/assurance/test_findings_list.py::test_parse_reads_sections_ids_and_states"
STRICT_XFAIL = (
    "tests/supervisor/test_supervisor_launch_review.py::"
    "test_the_runner_does_not_hold_pid1s_exploit_mitigation_secrets[fork]"
)


def test_parse_reads_sections_ids_and_states() -> None:
    assert parse_review(REVIEW) == [
        ("SR-3 G1", "high", None),
        ("SR-3 F1", "low", None),
        ("SR-3 I1", "informational", "fixed"),
        ("SR-3 F2", "medium", "open"),
        ("SR-1", None, "fixed"),
        ("SR-2", None, "fixed"),
    ]
    assert [row.needs_entry for row in parse_review(REVIEW)][2] is False


def test_a_review_file_is_its_sections_findings(tmp_path: Path) -> None:
    review = tmp_path / "SECURITY_REVIEW.md"
    review.write_text(REVIEW + "\n## SR-8. An outside review, its service part in review/\n")
    folder = tmp_path / "review"
    folder.mkdir()
    (folder / "SR-8-service.md").write_text(
        "# SR-8: the service\n\n## Findings\n\n- **S8-1 (high, fixed): a hole.**\n"
        "\n### S8-2 (low, open): another\n\nWhat it is.\n"
    )
    rows = review_findings(review, folder)
    assert [row.id for row in rows] == [
        "SR-1", "SR-2", "SR-3 G1", "SR-3 F1", "SR-3 I1", "SR-3 F2", "SR-8 S8-1", "SR-8 S8-2",
    ]  # fmt: skip
    assert rows[-1] == ReviewFinding("SR-8 S8-2", "low", "open")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[finding]]\nid = 'SR-1'\n", "Field required"),
        ("[[finding]]\nid = 'SR-1'\nseverity = 'high'\ntitle = 't'\nfix = 'open'\n"
         "tests = ['tests/a.py::t']\nowner = 'me'\n", "owner"),
        ("[[finding]]\nid = 'SR 1'\nseverity = 'high'\ntitle = 't'\nfix = 'open'\n"
         "tests = ['tests/a.py::t']\n", "id"),
        ("[[finding]]\nid = 'SR-1'\nseverity = 'dire'\ntitle = 't'\nfix = 'open'\n"
         "tests = ['tests/a.py::t']\n", "severity"),
        ("[[finding]]\nid = 'SR-1'\nseverity = 'high'\ntitle = 't'\nfix = 'HEAD~1'\n"
         "tests = ['tests/a.py::t']\n", "fix"),
        ("[[finding]]\nid = 'SR-1'\nseverity = 'high'\ntitle = 't'\nfix = 'open'\n"
         "before = 'abcdef1'\ntests = ['tests/a.py::t']\n", "no 'before'"),
        ("[[finding]\n", "cannot read"),
    ],
)  # fmt: skip
def test_a_bad_entry_is_one_line_naming_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "findings.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=says) as raised:
        load(path)
    assert "\n" not in str(raised.value)
    assert str(path) in str(raised.value)


def _entry(finding_id: str, fix: str, *tests: str, severity: str = "low") -> Finding:
    return Finding.model_validate(
        {"id": finding_id, "severity": severity, "title": "t", "fix": fix, "tests": tests}
    )


def test_every_way_the_list_and_the_review_disagree_is_named() -> None:
    review = [
        ReviewFinding("SR-1", None, "fixed"),
        ReviewFinding("SR-3 F1", "low", "open"),
        ReviewFinding("SR-3 F2", "low", "fixed"),
        ReviewFinding("SR-3 I1", "informational", "fixed"),
        ReviewFinding("SR-4 S1", "medium", None),
    ]
    entries = [
        _entry("SR-1", "abcdef1", PASSING, STRICT_XFAIL),
        _entry("SR-3 F1", "abcdef1", "tests/assurance/test_findings_list.py::test_no_such"),
        _entry("SR-3 F2", "open", PASSING),
        _entry("SR-4 S1", "abcdef1", PASSING, severity="high"),
        _entry("SR-9 F1", "open", STRICT_XFAIL),
    ]
    found = problems(entries, review)
    expected = [
        f"SR-1: {STRICT_XFAIL}: skipped here (marked xfail",
        "SR-3 F1: the review says open, no entry is",
        "SR-3 F1: tests/assurance/test_findings_list.py::test_no_such: not collected",
        "SR-3 F2: the review says fixed, every entry is open",
        f"SR-3 F2: {PASSING}: an open finding's test must be a strict xfail",
        "SR-4 S1: severity high, the review says medium",
        "SR-9 F1: no such finding in the review",
    ]
    assert len(found) == len(expected), found
    for start in expected:
        assert any(line.startswith(start) for line in found), (start, found)


def test_every_review_finding_has_an_entry_whose_tests_run_here() -> None:
    entries, review = load(), review_findings()
    assert len(review) >= 36
    assert len(entries) >= 36
    assert problems(entries, review) == []


def _in_git_checkout() -> bool:
    done = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.mark.skipif(not _in_git_checkout(), reason="not a git checkout: no history to check")
def test_every_fix_is_in_history_after_the_commit_before_it() -> None:
    entries = load(FINDINGS_FILE)
    assert commit_problems(entries) == []
    bad = _entry("SR-1", "f238b08", PASSING).model_copy(update={"before": "38269fc"})
    assert commit_problems([bad]) == ["SR-1: before 38269fc is not an ancestor of fix f238b08"]
    missing = _entry("SR-1", "0000000", PASSING)
    assert commit_problems([missing])[0].startswith("SR-1: commit 0000000 is not in this clone")


def test_the_readme_states_the_evidence_pages_date_and_totals() -> None:
    page = regression_render.EVIDENCE_FILE.read_text(encoding="utf-8")
    readme = regression_render.README_FILE.read_text(encoding="utf-8")
    stated = regression_render.page_facts(page)
    assert stated is not None, "docs/REGRESSION_EVIDENCE.md is not a generated page"
    assert regression_render.readme_facts(readme) == stated
