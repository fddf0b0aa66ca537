"""PID 1's two control records, checked on the host: the attestation and the exit report.

A record is valid only when it parses, names this run's nonce and runtime, and (for the
attestation) carries every required check, each passed. Anything else is described in
one bounded line, never trusted.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandbox_agent.sandbox.base import AttestationCheck, RunnerReport, Runtime

PROTOCOL_VERSION = 1
REQUIRED_CHECKS = (
    "pid1",
    "uid",
    "gid",
    "capabilities",
    "no_new_privs",
    "seccomp",
    "seccomp_canary",
    "network",
    "rootfs_readonly",
    "workspace_readonly",
    "tmp_mount",
    "rlimits",
    "cgroup_memory",
    "cgroup_pids",
    "environment",
    "docker_socket",
    "kernel",
)
"""docs/SANDBOX_PROTOCOL.md: every name is required on both runtimes."""
MAX_WHY = 200
MAX_CHECKS_KEPT = 64
"""At most this many of an attestation's checks are kept for the record."""
MAX_RECORD_INT = 10**9
"""Every number of a record is within this: one out of range makes the record malformed,
never an exception later (issue 20, SR-8 C8-3)."""


class Attestation(BaseModel):
    """The ``A`` record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["attestation"]
    v: int = Field(ge=0, le=MAX_RECORD_INT)
    nonce: str
    runtime: Runtime
    ok: bool
    checks: list[AttestationCheck]


class ExitReport(BaseModel):
    """The ``X`` record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["exit"]
    v: int = Field(ge=0, le=MAX_RECORD_INT)
    nonce: str
    launch: Literal["exec", "fork"]
    """``fork``: the trusted runner ran in PID 1's forked interpreter, not exec'd."""
    exit_code: int = Field(ge=-MAX_RECORD_INT, le=MAX_RECORD_INT)
    signal: int | None = Field(ge=0, le=MAX_RECORD_INT)
    timed_out: bool
    output_bytes: int = Field(ge=0, le=MAX_RECORD_INT)
    output_truncated: bool
    duration_ms: float = Field(ge=0, le=MAX_RECORD_INT, allow_inf_nan=False)
    oom_kills_delta: int | None = Field(ge=-MAX_RECORD_INT, le=MAX_RECORD_INT)
    runner_report: dict[str, Any] | None
    runner_report_error: str | None


def _short(text: str) -> str:
    return text if len(text) <= MAX_WHY else text[: MAX_WHY - 3] + "..."


def _parse(model: type[BaseModel], payload: bytes) -> tuple[Any, str]:
    try:
        return model.model_validate(json.loads(payload)), ""
    except (ValueError, ValidationError, RecursionError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return None, f"malformed: {_short(first)}"


def check_attestation(payload: bytes, nonce: str, runtime: Runtime) -> tuple[bool, str]:
    """Check an attestation payload.

    Returns:
        ``(True, "valid")`` or ``(False, why)`` with ``why`` one of ``malformed: ...``
        or ``failed: <check names>``.
    """
    record, why = _parse(Attestation, payload)
    if record is None:
        return False, why
    assert isinstance(record, Attestation)  # noqa: S101 - narrowing for mypy
    if record.v != PROTOCOL_VERSION or record.nonce != nonce or record.runtime != runtime:
        return False, "malformed: wrong version, nonce or runtime"
    names = {check.name for check in record.checks}
    missing = [name for name in REQUIRED_CHECKS if name not in names]
    failed = sorted({check.name for check in record.checks if not check.ok})
    if missing:
        return False, _short(f"failed: missing {', '.join(missing)}")
    if failed or not record.ok:
        return False, _short(f"failed: {', '.join(failed) or 'ok is false'}")
    return True, "valid"


def attestation_checks(payload: bytes) -> list[AttestationCheck]:
    """An attestation's checks, for the record (bounded; none when it is malformed).

    They describe; ``check_attestation`` decides.
    """
    record, _ = _parse(Attestation, payload)
    if not isinstance(record, Attestation):
        return []
    return [
        AttestationCheck(name=_short(check.name), ok=check.ok, detail=_short(check.detail))
        for check in record.checks[:MAX_CHECKS_KEPT]
    ]


def exit_facts(report: ExitReport) -> dict[str, Any]:
    """A valid exit report's facts, for the record (its nonce and runner report left out:
    the runner report is kept, checked, on its own)."""
    return report.model_dump(include=set(EXIT_FACTS))


EXIT_FACTS = frozenset(
    {
        "launch",
        "exit_code",
        "signal",
        "timed_out",
        "output_bytes",
        "output_truncated",
        "duration_ms",
        "oom_kills_delta",
        "runner_report_error",
    }
)


def check_exit_report(
    payload: bytes, nonce: str, output_bytes: int
) -> tuple[ExitReport | None, str, RunnerReport | None]:
    """Check an exit report against this run's nonce and the output the host received.

    Returns:
        ``(report, "valid", runner_report)`` or ``(None, why, None)``; the runner report is
        None when absent or malformed (a malformed one does not invalidate the exit report).
    """
    record, why = _parse(ExitReport, payload)
    if record is None:
        return None, why, None
    assert isinstance(record, ExitReport)  # noqa: S101 - narrowing for mypy
    if record.v != PROTOCOL_VERSION or record.nonce != nonce:
        return None, "malformed: wrong version or nonce", None
    if record.output_bytes != output_bytes:
        why = f"mismatch: reports {record.output_bytes} output bytes, host got {output_bytes}"
        return None, why, None
    runner: RunnerReport | None = None
    if record.runner_report is not None:
        try:
            runner = RunnerReport.model_validate(record.runner_report)
        except ValidationError:
            runner = None
    return record, "valid", runner
