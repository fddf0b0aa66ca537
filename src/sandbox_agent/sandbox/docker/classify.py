"""Pure classifiers: a finished run's status (docs/SANDBOX.md, "Classification"), and Docker errors.

Nothing here talks to Docker; both functions are tested with real captured inspect and
error text (``tests/sandbox/data``).
"""

from __future__ import annotations

import signal
from typing import Literal, NamedTuple

from sandbox_agent.sandbox.base import SandboxStatus
from sandbox_agent.sandbox.docker.records import ExitReport
from sandbox_supervisor.protocol import pid1_exit_code


class RunFacts(NamedTuple):
    """What the host observed about one started run."""

    host_timeout: bool
    """The host's own deadline passed and the host killed the container."""
    cancelled: bool
    """Cancellation was asked for while the run was going on."""
    attested: bool
    """A valid attestation was read before any workload output."""
    exit_report: ExitReport | None
    """The exit report, if it parsed and named this run's nonce (agreement not yet checked)."""
    exit_status: str
    """How the reader judged the exit report (``valid``, ``missing``, ``malformed: ...``)."""
    framing_error: str | None
    docker_exit_code: int | None
    oom_killed_flag: bool
    run_deadline: bool = False
    """The run's deadline (its wall clock, ``CancelToken.deadline``) passed while the
    workload ran, and the host killed the container (SR-13 F3)."""


class ExitClassification(NamedTuple):
    """How a started run ended, from ``RunFacts`` (it becomes ``SandboxResult``'s status,
    reason and exit report fields; the test counts are not here, they are the runner
    report's)."""

    status: SandboxStatus
    reason: str
    exit_report_valid: bool
    """The exit report is valid and agrees with Docker's exit code."""
    exit_status: str


def classify(facts: RunFacts) -> ExitClassification:
    """The run's status; first match wins: timeout (its own deadline, then the run's
    wall clock), cancelled, output_limit, oom_killed,
    refused (no valid exit report), killed, completed.

    ``completed`` needs a valid attestation and an exit report that agrees with Docker's
    exit code (``pid1_exit_code``: PID 1 ended normally, with the code the report
    implies); a report that disagrees with Docker is not a valid report at all.
    """
    report = facts.exit_report
    exit_status = facts.exit_status
    if report is not None and pid1_exit_code(report.exit_code) != facts.docker_exit_code:
        exit_status = (
            f"mismatch: exit report says {report.exit_code} (PID 1 ends with "
            f"{pid1_exit_code(report.exit_code)}), Docker says {facts.docker_exit_code}"
        )
        report = None
    if facts.framing_error is not None:
        report = None
    valid = report is not None

    def verdict(status: SandboxStatus, reason: str) -> ExitClassification:
        return ExitClassification(status, reason, valid, exit_status)

    if facts.host_timeout or (report is not None and report.timed_out):
        return verdict("timeout", "the workload ran past its deadline and was killed")
    if facts.run_deadline:
        return verdict("timeout", "the run's wall clock ran out while it ran; it was killed")
    if facts.cancelled:
        return verdict("cancelled", "cancelled while running; the container was killed")
    if report is not None and report.output_truncated:
        return verdict("output_limit", "the workload's output reached the budget and was cut")
    oom_counted = (
        report is not None and report.signal == signal.SIGKILL and (report.oom_kills_delta or 0) > 0
    )
    if facts.oom_killed_flag or oom_counted:
        return verdict("oom_killed", "the workload ran out of memory and was killed")
    if report is None:
        why = facts.framing_error or exit_status
        return verdict("refused", f"sandbox error: no valid exit report ({why})")
    if not facts.attested:
        return verdict("refused", "sandbox error: the run was not attested")
    if report.signal is not None:
        return verdict("killed", f"the workload was killed by signal {report.signal}")
    return verdict("completed", f"the workload exited with code {report.exit_code}")


DockerFailure = Literal[
    "daemon_unavailable",
    "docker_timeout",
    "image_missing",
    "runtime_unknown",
    "container_missing",
    "not_running",
    "start_failed",
    "out_of_resources",
    "in_progress",
    "unknown",
]

# (substring of the error text, classification); first match wins. Texts as Docker
# 20.10 writes them (tests/sandbox/data/docker_errors.json).
_DOCKER_PATTERNS: tuple[tuple[str, DockerFailure], ...] = (
    ("Connection aborted", "daemon_unavailable"),
    ("Connection refused", "daemon_unavailable"),
    ("Read timed out", "docker_timeout"),
    ("No such image", "image_missing"),
    ("Unknown runtime specified", "runtime_unknown"),
    ("No such container", "container_missing"),
    ("is not running", "not_running"),
    ("is already in progress", "in_progress"),
    ("cannot allocate memory", "out_of_resources"),
    ("no space left on device", "out_of_resources"),
    ("OCI runtime", "start_failed"),
    ("failed to create shim", "start_failed"),
)


def classify_docker_error(text: str) -> DockerFailure:
    """Name the kind of a Docker API failure from its text (``str(error)``)."""
    for needle, kind in _DOCKER_PATTERNS:
        if needle in text:
            return kind
    return "unknown"
