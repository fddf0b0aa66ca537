"""The test verdict, computed from sandbox evidence only. Printing cannot claim it.

Test code runs in the runner's own process, so its stdout is untrusted and never
parsed. A run passes only when all of these hold:

- the sandbox status is ``completed`` (a valid attestation and an exit report that
  Docker agrees with), and the run was attested;
- the exit code is 0;
- the trusted wrapper's report (fd 3, collected by PID 1) exists, names the runner
  that was asked for, and says at least one test ran that was not skipped, with no
  failures and no errors;
- the report and the exit code agree (a clean report with a non-zero exit, or a
  failing report with exit 0, is inconsistent and fails).

One test run, from the sandbox to the run's result (issue 31), and what ``failures``
means at each step:

1. ``sandbox_supervisor.run_tests`` counts, in the trusted wrapper: ``failures`` are the
   tests that failed (unittest: failures and unexpected successes; pytest: a failed
   ``call``), ``errors`` apart (unittest: errors, a module that cannot load; pytest: a
   failed setup, teardown or collection).
2. ``sandbox.base.RunnerReport`` (in ``SandboxResult.runner_report``): those two counts,
   as PID 1 relayed them, unchanged.
3. ``sandbox.docker.classify``: ``RunFacts`` -> ``ExitClassification`` (how the run
   ended: ``SandboxResult.status``); no test counts.
4. ``TestVerdict`` (``judge``, here): ``failures`` and ``errors`` apart, as reported.
5. ``TestRun`` (here; a ``run_tests`` result, the trace, the final run):
   ``failures`` = failed **plus** errored (``failures + errors``), ``errors`` alone too.
   This is where the sum is made, once; the public ``run_tests`` result
   (docs/TOOLS.md) shows both.
6. ``controller.status.FinalTestEvidence`` keeps only ``passed`` (and the sandbox
   status); ``controller.models.FinalTests`` (``final_tests`` of the result, the
   contract) copies ``TestRun.failures``: failed plus errored, with no ``errors``.

An evaluation's held-out check (``evals``) keeps the report's meaning instead:
``held_out.failures`` is failed only, ``held_out.errors`` apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from sandbox_agent.printable import printable
from sandbox_agent.sandbox.base import SandboxResult


@dataclass(frozen=True)
class TestVerdict:
    """Pass or fail of one run, with the report's counts as they are (``failures`` and
    ``errors`` apart: step 4 of the module docstring)."""

    __test__: ClassVar[bool] = False  # not a pytest test class, despite the name

    passed: bool
    reason: str
    tests_run: int
    failures: int
    errors: int


NO_TEST_RAN = "no test ran"
UNITTEST_FOUND_NONE = (
    " (unittest discovery loads TestCase classes from test*.py modules of packages under"
    " the root; for pytest-style tests pass --runner pytest or add a conftest.py)"
)
"""Said when unittest, the runner of a repository that does not configure pytest, ran
nothing: a folder of plain ``def test_...`` functions is the usual cause."""


def judge(result: SandboxResult, runner: str) -> TestVerdict:
    """Pass or fail from the evidence of one sandbox run (see the module docstring)."""
    report = result.runner_report
    tests_run = report.tests_run if report else 0
    failures = report.failures if report else 0
    errors = report.errors if report else 0

    def fail(reason: str) -> TestVerdict:
        return TestVerdict(False, reason, tests_run, failures, errors)

    if result.status != "completed":
        return fail(f"the sandbox run ended '{result.status}': {result.reason}")
    if not result.attested or not result.exit_report_valid:
        return fail("the sandbox run is not attested with a valid exit report")
    if report is None:
        return fail("the runner wrote no report: no test ran, or the run was cut short")
    if report.runner != runner:
        return fail(f"the report is from runner '{report.runner}', not '{runner}'")
    if tests_run - report.skipped < 1:
        if tests_run > 0:  # found, then skipped (setUpClass, a module-level skip, ...)
            return fail(
                f"{NO_TEST_RAN}: all {tests_run} tests were skipped, and a skip is not a pass"
            )
        return fail(NO_TEST_RAN + (UNITTEST_FOUND_NONE if runner == "unittest" else ""))
    clean = failures == 0 and errors == 0
    if clean and result.exit_code != 0:
        return fail(f"exit code {result.exit_code} with a clean report: inconsistent, not a pass")
    if not clean and result.exit_code == 0:
        return fail("exit code 0 with failures in the report: inconsistent, not a pass")
    if not clean:
        return fail(f"{failures} failed, {errors} errors of {tests_run} tests")
    return TestVerdict(True, f"{tests_run} tests ran, none failed", tests_run, failures, errors)


class TestRun(BaseModel):
    """One test run's verdict and evidence (a ``run_tests`` call or the final run)."""

    __test__: ClassVar[bool] = False  # not a pytest test class, despite the name

    model_config = ConfigDict(extra="forbid")

    passed: bool
    tests_run: int
    failures: int
    """Tests that failed or errored (the report's ``failures + errors``; ``errors`` alone
    is below): step 5 of the module docstring."""
    errors: int
    status: str
    """The sandbox status (``completed``, ``timeout``, ``refused``, ...)."""
    exit_code: int | None
    attested: bool
    runtime: str
    runner: str
    selector: str | None
    reason: str
    """One line: why it passed or failed."""
    summary: str
    """Bounded and control-character free: the counts and the last lines of output."""
    sandbox: SandboxResult
    reused: bool = False
    """The final verdict is an earlier verified whole-suite run of the same tree bytes."""
    baseline_tests: int | None = None
    """Final run only: the test ids the original collected (None: not checked)."""
    missing_tests: tuple[str, ...] = ()
    """Final run only: those it did not run (the verdict then fails)."""
    baseline_failure: str | None = None
    """Final run only: why a run that otherwise passed fails the baseline check."""

    @classmethod
    def from_result(
        cls,
        result: SandboxResult,
        *,
        runner: str,
        selector: str | None,
        max_summary_bytes: int,
        summary_lines: int,
    ) -> TestRun:
        """Judge ``result`` and summarise it."""
        verdict = judge(result, runner)
        head = (
            f"{'PASSED' if verdict.passed else 'FAILED'}: {verdict.reason} "
            f"(tests_run={verdict.tests_run} failures={verdict.failures} errors={verdict.errors} "
            f"status={result.status} exit_code={result.exit_code})"
        )
        return cls(
            passed=verdict.passed,
            tests_run=verdict.tests_run,
            failures=verdict.failures + verdict.errors,
            errors=verdict.errors,
            status=result.status,
            exit_code=result.exit_code,
            attested=result.attested,
            runtime=result.runtime,
            runner=runner,
            selector=selector,
            reason=verdict.reason,
            summary=summarise(head, result.output, max_summary_bytes, summary_lines),
            sandbox=result,
        )

    def evidence(self) -> dict[str, Any]:
        """The JSON-safe ``run_tests`` result (docs/CONTRACT.md section 5), without raw output."""
        final_only = {"baseline_tests", "missing_tests", "baseline_failure"}
        excluded = {"sandbox"} | (final_only if self.baseline_tests is None else set())
        return self.model_dump(exclude=excluded) | {
            "output_truncated": self.sandbox.output_truncated
        }


def summarise(head: str, output: bytes, max_bytes: int, max_lines: int) -> str:
    """``head``, then the last ``max_lines`` lines of ``output``, within ``max_bytes``.

    Control and format characters (terminal escapes, bidi overrides) are replaced, so
    the summary cannot rewrite what a reader of the trace sees.
    """
    text = output.decode("utf-8", errors="replace")
    tail = [_clean(line)[:200] for line in text.splitlines()[-max_lines:]]
    body = "\n".join(tail)
    budget = max_bytes - len(head.encode("utf-8")) - 1
    encoded = body.encode("utf-8")
    if len(encoded) > budget:
        body = encoded[len(encoded) - max(budget, 0) :].decode("utf-8", errors="ignore")
    return f"{head}\n{body}" if body else head


def _clean(line: str) -> str:
    return printable(line)
