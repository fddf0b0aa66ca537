"""Regenerate ``docs/ADVERSARIAL_REPORT.md`` from the security suites' real results.

Runs pytest once over the security suites with ``--junitxml``, then counts, per suite,
passes, failures, errors, skips, expected failures (known open findings, ``xfail``) and
unexpected passes separately. A skip is never counted as a pass. ``python -m
devtools.assurance.adversarial_report`` (``make adversarial-report``) exits 0 only
when nothing failed or errored.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.settings import PROJECT_ROOT

REPORT_FILE = PROJECT_ROOT / "docs" / "ADVERSARIAL_REPORT.md"
SECURITY_SUITES: tuple[tuple[str, str], ...] = (
    ("tests/sandbox", "sandbox: spec verification, classification, conformance (runc, runsc)"),
    ("tests/supervisor", "PID 1: attestation, framing, budgets, reaping"),
    ("tests/policy", "policy: protected paths, command allowlist, runner detection"),
    ("tests/tools", "the six tools against hostile paths and arguments"),
    ("tests/workspace", "workspace: descriptor-relative, O_NOFOLLOW file operations"),
    ("tests/controller", "controller: injection and adversarial providers, status precedence"),
    ("tests/service", "service: authentication, limits, hostile requests"),
    ("tests/evidence", "evidence: tampering with every field of a sealed run"),
    ("tests/providers", "providers: hostile endpoints (redirects, size, pace), key handling"),
    ("tests/trace", "trace: the redactor against secrets, cuts and odd strings"),
    ("tests/ledger", "ledger: budgets, impossible counts, concurrent spend"),
    ("tests/evals", "evals: held-out tests, hostile dataset rows, report injection"),
    ("tests/assurance", "assurance: guarantees and threat-model tables, review regressions"),
)
"""(folder, what it covers): the suites whose results the report carries."""
PYTEST_TIMEOUT_S = 3600.0
MAX_LISTED = 200

Outcome = str  # passed | failed | error | skipped | xfailed | xpassed


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodeid: str
    suite: str
    outcome: Outcome
    message: str = ""


class SuiteCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str
    passed: int = 0
    failed: int = 0
    error: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.error + self.skipped + self.xfailed + self.xpassed


class AdversarialReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    generated: str
    commit: str
    suites: list[SuiteCounts]
    cases: list[CaseResult] = Field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(int(getattr(suite, outcome)) for suite in self.suites)


def _suite_of(classname: str) -> str:
    parts = classname.split(".")
    return "/".join(parts[:2]) if len(parts) > 2 and parts[0] == "tests" else "other"


def _nodeid(classname: str, name: str) -> str:
    parts = classname.split(".")
    modules = [part for part in parts if not part[:1].isupper()]
    classes = [part for part in parts if part[:1].isupper()]
    return "::".join(["/".join(modules) + ".py", *classes, name])


def parse_junit(xml_text: str) -> list[CaseResult]:
    """Every test case of a pytest junit XML, with one outcome each."""
    root = ET.fromstring(xml_text)  # noqa: S314 - our own pytest's output
    cases: list[CaseResult] = []
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        outcome, message = "passed", ""
        for child in case:
            kind = child.get("type", "")
            text = (child.get("message") or child.text or "").strip().splitlines()
            first = text[0][:300] if text else ""
            if child.tag == "failure":
                outcome = "xpassed" if "XPASS" in first else "failed"
            elif child.tag == "error":
                outcome = "error"
            elif child.tag == "skipped":
                outcome = "xfailed" if kind == "pytest.xfail" else "skipped"
            else:
                continue
            message = first
            break
        cases.append(
            CaseResult(
                nodeid=_nodeid(classname, name),
                suite=_suite_of(classname),
                outcome=outcome,
                message=message,
            )
        )
    return cases


def tally(cases: list[CaseResult], suites: Sequence[str]) -> list[SuiteCounts]:
    counts = {suite: SuiteCounts(suite=suite) for suite in suites}
    for case in cases:
        row = counts.setdefault(case.suite, SuiteCounts(suite=case.suite))
        setattr(row, case.outcome, getattr(row, case.outcome) + 1)
    return list(counts.values())


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def run_suites(extra_args: Sequence[str] = ()) -> AdversarialReport:
    """Run the security suites that exist here and collect their results."""
    folders = [folder for folder, _ in SECURITY_SUITES if (PROJECT_ROOT / folder).is_dir()]
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={junit}", "-o", "junit_family=xunit2", *extra_args, *folders],
            cwd=PROJECT_ROOT,
            timeout=PYTEST_TIMEOUT_S,
            check=False,
        )  # fmt: skip
        cases = parse_junit(junit.read_text(encoding="utf-8")) if junit.exists() else []
    return AdversarialReport(
        generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        commit=_commit(),
        suites=tally(cases, folders),
        cases=cases,
    )


def render(report: AdversarialReport) -> str:
    """The Markdown page."""
    about = dict(SECURITY_SUITES)
    lines = [
        "# Adversarial report",
        "",
        f"Generated by `make adversarial-report` at {report.generated} on commit "
        f"`{report.commit}`. Do not edit by hand: run it again.",
        "",
        "Each security suite is run for real (Docker tests included where a daemon is "
        "there). Passes, failures, errors, skips, expected failures (`xfail`: open "
        "findings of docs/SECURITY_REVIEW.md, written before their fix) and unexpected "
        "passes are counted separately. **A skip is never a pass.**",
        "",
        "| suite | covers | tests | passed | failed | errors | skipped | xfailed | xpassed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report.suites:
        lines.append(
            f"| `{row.suite}` | {about.get(row.suite, '')} | {row.total} | {row.passed} | "
            f"{row.failed} | {row.error} | {row.skipped} | {row.xfailed} | {row.xpassed} |"
        )
    totals = [report.count(name) for name in ("passed", "failed", "error", "skipped")]
    lines.append(
        f"| **all** | | {sum(row.total for row in report.suites)} | {totals[0]} | {totals[1]} | "
        f"{totals[2]} | {totals[3]} | {report.count('xfailed')} | {report.count('xpassed')} |"
    )
    for title, outcomes in (
        ("Failures and errors", ("failed", "error", "xpassed")),
        ("Skipped (not passes)", ("skipped",)),
        ("Expected failures: open findings", ("xfailed",)),
    ):
        listed = [case for case in report.cases if case.outcome in outcomes]
        lines += ["", f"## {title}", ""]
        if not listed:
            lines.append("None.")
        for case in listed[:MAX_LISTED]:
            reason = f": {case.message}" if case.message else ""
            lines.append(f"- `{case.nodeid}` ({case.outcome}){reason}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suites, write the report, exit 0 only when nothing failed or errored."""
    args = list(sys.argv[1:] if argv is None else argv)
    report = run_suites(args)
    REPORT_FILE.write_text(render(report), encoding="utf-8")
    bad = report.count("failed") + report.count("error") + report.count("xpassed")
    print(
        f"wrote {REPORT_FILE}: {report.count('passed')} passed, {report.count('failed')} failed, "
        f"{report.count('error')} errors, {report.count('skipped')} skipped, "
        f"{report.count('xfailed')} xfailed, {report.count('xpassed')} xpassed (strict: fail)"
    )
    return 1 if bad or not report.cases else 0


if __name__ == "__main__":
    sys.exit(main())
