"""The run classifier's precedence, on real Docker exit states; the Docker error classifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_records import exit_report

from sandbox_agent.sandbox.docker.classify import RunFacts, classify, classify_docker_error
from sandbox_agent.sandbox.docker.records import ExitReport

DATA = Path(__file__).parent / "data"
STATES: dict[str, Any] = json.loads((DATA / "docker_inspect.json").read_text())["states"]
ERRORS: dict[str, Any] = json.loads((DATA / "docker_errors.json").read_text())


def facts(state: str, report: dict[str, Any] | None, **changes: Any) -> RunFacts:
    docker_state = STATES[state]
    values: dict[str, Any] = {
        "host_timeout": False,
        "cancelled": False,
        "attested": True,
        "exit_report": ExitReport.model_validate(report) if report is not None else None,
        "exit_status": "valid" if report is not None else "missing",
        "framing_error": None,
        "docker_exit_code": docker_state["ExitCode"],
        "oom_killed_flag": docker_state["OOMKilled"],
    }
    values.update(changes)
    return RunFacts(**values)


CASES = [
    ("completed", "runc_exit_0", exit_report(), {}),
    ("completed", "runc_exit_1", exit_report(exit_code=1), {}),
    ("timeout", "runc_docker_kill", None, {"host_timeout": True}),
    ("timeout", "runc_exit_0", exit_report(timed_out=True), {}),
    ("timeout", "runc_docker_kill", None, {"host_timeout": True, "cancelled": True}),
    ("cancelled", "runc_docker_kill", None, {"cancelled": True}),
    ("output_limit", "runc_exit_0", exit_report(output_truncated=True), {}),
    ("oom_killed", "runc_oom", None, {}),
    ("oom_killed", "runsc_oom", None, {}),
    # PID 1 reports a SIGKILLed workload and ends normally with 121 (pid1_exit_code).
    (
        "oom_killed",
        "runc_docker_kill",
        exit_report(exit_code=137, signal=9, oom_kills_delta=1),
        {"docker_exit_code": 121},
    ),
    ("killed", "runc_docker_kill", exit_report(exit_code=137, signal=9), {"docker_exit_code": 121}),
    # PID 1 itself killed (137) after an exit record reached its stream: a copy the
    # workload wrote through /proc/1/fd/1 (runsc, G1), never a valid report.
    ("refused", "runc_docker_kill", exit_report(exit_code=137, signal=9), {}),
    ("refused", "runc_docker_kill", exit_report(exit_code=137), {}),
    ("refused", "runsc_exit_0", exit_report(exit_code=126), {"docker_exit_code": 126}),
    ("refused", "runc_docker_kill", None, {}),
    ("refused", "runc_exit_0", exit_report(exit_code=1), {}),
    ("refused", "runc_exit_0", exit_report(), {"attested": False}),
    ("refused", "runc_exit_0", exit_report(), {"framing_error": "a second attestation"}),
    ("refused", "runsc_exit_0", None, {"docker_exit_code": 2}),
]


@pytest.mark.parametrize(("status", "state", "report", "changes"), CASES)
def test_classification_table(
    status: str, state: str, report: dict[str, Any] | None, changes: dict[str, Any]
) -> None:
    verdict = classify(facts(state, report, **changes))
    assert verdict.status == status
    if status == "completed":
        assert verdict.exit_report_valid


def test_a_report_disagreeing_with_docker_is_not_valid() -> None:
    verdict = classify(facts("runc_exit_1", exit_report(exit_code=0)))
    assert verdict.status == "refused"
    assert not verdict.exit_report_valid
    assert verdict.exit_status.startswith("mismatch")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("image_missing", "image_missing"),
        ("runtime_unknown", "runtime_unknown"),
        ("container_missing", "container_missing"),
        ("remove_missing", "container_missing"),
        ("start_exec_missing", "start_failed"),
        ("kill_not_running", "not_running"),
        ("daemon_unavailable", "daemon_unavailable"),
    ],
)
def test_docker_errors_are_classified_from_their_real_text(name: str, kind: str) -> None:
    assert classify_docker_error(ERRORS[name]["text"]) == kind


def test_unknown_docker_text_is_unknown() -> None:
    assert classify_docker_error("something new") == "unknown"
