"""The terminal status, computed from evidence by one pure function and its precedence table.

What the model said (``finish`` and its summary) is not evidence: it only ends the loop.
First match wins:

====  ==========================================================  ==================
 #    evidence                                                     status
====  ==========================================================  ==================
 1    the run was cancelled                                        CANCELLED
 2    the wall clock ran out                                       TIMEOUT
 3    the sandbox could not be reached or verified                 SANDBOX_ERROR
 3b   the model provider failed after its retries                  FAILED
 4    the policy-denial budget ran out                             POLICY_ABORTED
 5    another budget ran out                                       BUDGET_EXHAUSTED
 6    the original repository changed                              FAILED
 7    the final diff touches a protected path                      POLICY_ABORTED
 8    no final test run                                            FAILED
 9    final tests refused (unverified sandbox)                     SANDBOX_ERROR
 10   final tests not completed and attested (timeout, OOM, ...)   FAILED
 11   final tests failed                                           FAILED
 11b  final tests passed but left out tests the original had       FAILED
 12   final tests passed in a verified sandbox                     SUCCEEDED
====  ==========================================================  ==================

A FAILED run whose loop ended before it tried anything (``Evidence.loop_untried``: the
``repair`` strategy found nothing to repair) adds the loop's reason after its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from sandbox_agent.controller.models import RunStatus

LoopEnd = Literal[
    "finished",  # the model called finish (or the plan ran out)
    "cancelled",
    "timeout",
    "sandbox_error",
    "provider_error",  # the model API failed after its retries
    "policy_aborted",
    "budget_exhausted",
]


if TYPE_CHECKING:
    from sandbox_agent.tools.testrun import TestRun


class FinalTestEvidence(NamedTuple):
    """The controller's own final test run."""

    sandbox_status: str
    """``completed``, ``timeout``, ``refused``, ... (docs/SANDBOX.md, the sandbox run)."""
    attested: bool
    passed: bool
    baseline_failure: str | None = None
    """Why a run that otherwise passed left out tests the original collected (SR-8 C8-1)."""
    verdict: str = ""
    """The run's own verdict in one line (``1 failed, 0 errors of 3 tests``, ``no test
    ran (...)``), told after "the final tests fail"."""

    @classmethod
    def of(cls, run: TestRun) -> FinalTestEvidence:
        """What the status rules read of the final ``TestRun``."""
        return cls(
            run.sandbox.status,
            bool(run.attested),
            bool(run.passed),
            run.baseline_failure,
            run.reason,
        )


class Evidence(NamedTuple):
    loop_end: LoopEnd
    loop_reason: str
    """One line: which budget, what failed, or the model's finish."""
    original_intact: bool
    protected_in_diff: tuple[str, ...]
    final_tests: FinalTestEvidence | None
    loop_untried: bool = False
    """The loop ended "finished" before trying anything: a FAILED reason adds
    ``loop_reason`` after its own (``LoopStop.untried``)."""


class StatusDecision(NamedTuple):
    status: RunStatus
    reason: str


_LOOP_STATUS: dict[LoopEnd, RunStatus] = {
    "cancelled": "CANCELLED",
    "timeout": "TIMEOUT",
    "sandbox_error": "SANDBOX_ERROR",
    "provider_error": "FAILED",
    "policy_aborted": "POLICY_ABORTED",
    "budget_exhausted": "BUDGET_EXHAUSTED",
}


def compute_status(evidence: Evidence) -> StatusDecision:
    """The run's terminal status and a one-line reason (the table in this module's
    docstring); a FAILED run whose loop tried nothing says why after it."""
    decision = _decide(evidence)
    if evidence.loop_untried and evidence.loop_end == "finished" and decision.status == "FAILED":
        return decision._replace(reason=f"{decision.reason}; {evidence.loop_reason}")
    return decision


def _decide(evidence: Evidence) -> StatusDecision:
    if evidence.loop_end != "finished":
        return StatusDecision(_LOOP_STATUS[evidence.loop_end], evidence.loop_reason)
    if not evidence.original_intact:
        return StatusDecision("FAILED", "the original repository changed during the run")
    if evidence.protected_in_diff:
        paths = ", ".join(evidence.protected_in_diff[:5])
        return StatusDecision("POLICY_ABORTED", f"the final diff touches protected paths: {paths}")
    tests = evidence.final_tests
    if tests is None:
        return StatusDecision("FAILED", "no final test run")
    if tests.sandbox_status == "refused":
        return StatusDecision("SANDBOX_ERROR", "the final test run could not be verified")
    if tests.sandbox_status != "completed" or not tests.attested:
        return StatusDecision("FAILED", f"the final test run ended {tests.sandbox_status}")
    if not tests.passed and tests.baseline_failure is not None:
        return StatusDecision("FAILED", f"the final run left out tests: {tests.baseline_failure}")
    if not tests.passed:
        why = f": {tests.verdict}" if tests.verdict else ""
        return StatusDecision("FAILED", f"the final tests fail{why}")
    return StatusDecision(
        "SUCCEEDED", "the final tests pass in a verified sandbox; original intact"
    )
