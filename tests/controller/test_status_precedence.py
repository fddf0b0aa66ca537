"""The terminal status table: first match wins; a model's claim is no evidence."""

from __future__ import annotations

import pytest

from sandbox_agent.controller.status import Evidence, FinalTestEvidence, compute_status

PASSED = FinalTestEvidence("completed", attested=True, passed=True)
FAILED = FinalTestEvidence("completed", attested=True, passed=False)


def evidence(**changes: object) -> Evidence:
    base = Evidence(
        loop_end="finished",
        loop_reason="the model finished",
        original_intact=True,
        protected_in_diff=(),
        final_tests=PASSED,
    )
    return base._replace(**changes)


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ({}, "SUCCEEDED"),
        ({"loop_end": "cancelled"}, "CANCELLED"),
        ({"loop_end": "timeout"}, "TIMEOUT"),
        ({"loop_end": "sandbox_error"}, "SANDBOX_ERROR"),
        ({"loop_end": "provider_error"}, "FAILED"),
        ({"loop_end": "policy_aborted"}, "POLICY_ABORTED"),
        ({"loop_end": "budget_exhausted"}, "BUDGET_EXHAUSTED"),
        ({"original_intact": False}, "FAILED"),
        ({"protected_in_diff": ("tests/test_x.py: protected",)}, "POLICY_ABORTED"),
        ({"final_tests": None}, "FAILED"),
        ({"final_tests": FinalTestEvidence("refused", False, False)}, "SANDBOX_ERROR"),
        ({"final_tests": FinalTestEvidence("timeout", True, False)}, "FAILED"),
        ({"final_tests": FinalTestEvidence("completed", False, True)}, "FAILED"),
        ({"final_tests": FAILED}, "FAILED"),
        # Precedence: an earlier row wins over every later one.
        ({"loop_end": "cancelled", "original_intact": False}, "CANCELLED"),
        ({"loop_end": "timeout", "final_tests": FAILED}, "TIMEOUT"),
        ({"loop_end": "policy_aborted", "final_tests": PASSED}, "POLICY_ABORTED"),
        ({"loop_end": "budget_exhausted", "final_tests": PASSED}, "BUDGET_EXHAUSTED"),
        ({"original_intact": False, "protected_in_diff": ("conftest.py",)}, "FAILED"),
        ({"protected_in_diff": ("conftest.py",), "final_tests": FAILED}, "POLICY_ABORTED"),
    ],
)
def test_status_table(changes: dict[str, object], status: str) -> None:
    assert compute_status(evidence(**changes)).status == status


def test_success_needs_every_piece_of_evidence() -> None:
    verdict = compute_status(evidence())
    assert verdict.status == "SUCCEEDED"
    assert "verified sandbox" in verdict.reason


def test_a_loop_that_tried_nothing_says_why_after_the_final_tests() -> None:
    untried = {"loop_reason": "found nothing to repair", "loop_untried": True}
    failed = compute_status(evidence(final_tests=FAILED._replace(verdict="1 failed"), **untried))
    assert failed == ("FAILED", "the final tests fail: 1 failed; found nothing to repair")
    assert compute_status(evidence(**untried)).reason.startswith("the final tests pass")
    stopped = compute_status(
        evidence(loop_end="timeout", loop_reason="wall clock", loop_untried=True)
    )
    assert stopped == ("TIMEOUT", "wall clock")
