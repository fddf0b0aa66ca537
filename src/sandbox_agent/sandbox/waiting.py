"""The ``wait`` phase: PID 1's frames until exit, the host's deadline, cancellation.

The host polls every ``POLL_S``; on cancellation, on its own deadline (the workload's
timeout plus PID 1's kill grace plus a margin) or on a framing error it kills the
container. Memory stays bounded: one Docker header, one frame, output up to the budget,
4 KiB of PID 1's own stderr.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from sandbox_agent.errors import DockerUnavailable
from sandbox_agent.sandbox import cleanup
from sandbox_agent.sandbox.attach import AttachedStream
from sandbox_agent.sandbox.base import CancelToken, Diagnostics, PreparedSandbox, SandboxResult
from sandbox_agent.sandbox.classify import RunFacts, classify, classify_docker_error
from sandbox_agent.sandbox.diagnostics import bounded, docker_state, elapsed_ms
from sandbox_agent.sandbox.spec import KILL_GRACE_S
from sandbox_agent.sandbox.stream import (
    DOCKER_STDOUT,
    MAX_PID1_STDERR,
    DockerStreamDemux,
    FrameReader,
)

POLL_S = 0.1
"""How often the host checks cancellation and its deadline while the workload runs."""
HOST_DEADLINE_MARGIN_S = 5.0
"""Beyond PID 1's own deadline and kill grace: start-up and attestation time."""
DRAIN_AFTER_KILL_S = 5.0
"""After the host kills the container, how long it still reads for the stream's end."""
EXIT_WAIT_S = 10.0


class StartedSandbox:
    """A container whose PID 1 runs, and the attach stream its frames arrive on."""

    def __init__(self, prepared: PreparedSandbox, stream: AttachedStream) -> None:
        self.prepared = prepared
        self.stream = stream
        self.phase_ms: dict[str, float] = dict(prepared.phase_ms)
        self.started_at = time.monotonic()

    @classmethod
    def attach(cls, api: Any, prepared: PreparedSandbox) -> StartedSandbox:
        """Attach to the (not yet started) container.

        Raises:
            docker.errors.APIError: the daemon refused the attach.
        """
        return cls(prepared, AttachedStream(api, prepared.container_id))

    def mark_started(self, phase_ms: dict[str, float]) -> None:
        """Record the phases so far; the run's clock starts now."""
        self.phase_ms = dict(phase_ms)
        self.started_at = time.monotonic()

    def close(self) -> None:
        self.stream.close()


class _ReadOutcome(NamedTuple):
    host_timeout: bool
    cancelled: bool
    kill_failure: str | None
    attest_ms: float | None
    pid1_stderr: bytes


def _read_frames(
    api: Any, started: StartedSandbox, cancel: CancelToken, reader: FrameReader
) -> _ReadOutcome:
    """Feed the attach stream to ``reader`` until it ends; kill on cancel, deadline, bad frames."""
    prepared = started.prepared
    limits = prepared.request.limits
    demux = DockerStreamDemux()
    pid1_stderr = bytearray()
    host_deadline = started.started_at + limits.timeout_s + KILL_GRACE_S + HOST_DEADLINE_MARGIN_S
    killed_at: float | None = None
    host_timeout = cancelled = False
    kill_failure: str | None = None
    attest_ms: float | None = None
    while True:
        now = time.monotonic()
        if killed_at is None:
            cancelled = cancel.cancelled
            host_timeout = not cancelled and now >= host_deadline
            if cancelled or host_timeout or reader.framing_error is not None:
                kill_failure = cleanup.kill(api, prepared.container_id)
                killed_at = now
        elif now - killed_at > DRAIN_AFTER_KILL_S:
            break
        data = started.stream.recv(POLL_S)
        if data is None:
            continue
        if not data:
            break
        for stream_id, piece in demux.feed(data):
            if stream_id == DOCKER_STDOUT:
                reader.feed(piece)
            elif len(pid1_stderr) < MAX_PID1_STDERR:
                pid1_stderr.extend(piece[: MAX_PID1_STDERR - len(pid1_stderr)])
        if attest_ms is None and reader.attestation_seen:
            attest_ms = elapsed_ms(started.started_at)
    return _ReadOutcome(host_timeout, cancelled, kill_failure, attest_ms, bytes(pid1_stderr))


def wait_for_exit(api: Any, started: StartedSandbox, cancel: CancelToken) -> SandboxResult:
    """Read until PID 1's stream ends, collect Docker's exit state, classify.

    Raises:
        DockerUnavailable: the daemon stopped answering.
    """
    prepared = started.prepared
    request = prepared.request
    reader = FrameReader(prepared.nonce, request.runtime, request.limits.output_budget_bytes)
    outcome = _read_frames(api, started, cancel, reader)
    attest_ms, kill_failure, pid1_stderr = (
        outcome.attest_ms,
        outcome.kill_failure,
        outcome.pid1_stderr,
    )
    reader.finish()
    run_ms = elapsed_ms(started.started_at)
    phase_ms = started.phase_ms
    phase_ms["attest"] = attest_ms if attest_ms is not None else run_ms
    phase_ms["run"] = round(run_ms - phase_ms["attest"], 2)
    inspect = _exit_state(api, prepared.container_id)
    status_text, exit_code, oom_flag = docker_state(inspect)
    facts = RunFacts(
        host_timeout=outcome.host_timeout,
        cancelled=outcome.cancelled,
        attested=reader.attested,
        exit_report=reader.exit_report,
        exit_status=reader.exit_status,
        framing_error=reader.framing_error,
        docker_exit_code=exit_code,
        oom_killed_flag=bool(oom_flag),
    )
    verdict = classify(facts)
    report = reader.exit_report if verdict.exit_report_valid else None
    detail = []
    if kill_failure:
        detail.append(f"kill failed: {kill_failure}")
    if pid1_stderr:
        detail.append("pid1 stderr: " + pid1_stderr.decode("utf-8", "replace"))
    return SandboxResult(
        status=verdict.status,
        reason=verdict.reason,
        started=True,
        runtime=request.runtime,
        attested=reader.attested,
        exit_report_valid=verdict.exit_report_valid,
        exit_code=report.exit_code if report else None,
        launch=report.launch if report else None,
        output=bytes(reader.output),
        output_truncated=report.output_truncated if report else False,
        runner_report=reader.runner_report if report else None,
        image_id=prepared.image_id,
        spec_sha256=prepared.spec_sha256,
        attestation_sha256=reader.attestation_sha256,
        exit_report_sha256=reader.exit_report_sha256,
        phase_ms=phase_ms,
        diagnostics=Diagnostics(
            phase="exit" if reader.exit_report is not None else "run",
            container_id=prepared.container_id[:12],
            docker_state=status_text,
            docker_exit_code=exit_code,
            oom_killed_flag=oom_flag,
            attestation=reader.attestation_status,
            exit_report=verdict.exit_status,
            verification="ok",
            detail=bounded(" | ".join(detail)),
        ),
    )


def _exit_state(api: Any, container_id: str) -> dict[str, Any]:
    """Wait for the container to stop (killing it if it does not), then inspect it."""
    try:
        api.wait(container_id, timeout=EXIT_WAIT_S)
    except Exception as error:  # a read timeout, or the daemon is gone
        if classify_docker_error(str(error)) == "daemon_unavailable" and "timed out" not in str(
            error
        ):
            raise DockerUnavailable(f"Docker stopped answering during wait: {error}") from error
        cleanup.kill(api, container_id)
    try:
        result: dict[str, Any] = api.inspect_container(container_id)
    except Exception as error:  # the SDK raises requests and docker errors alike
        if classify_docker_error(str(error)) == "daemon_unavailable":
            raise DockerUnavailable(f"Docker stopped answering during inspect: {error}") from error
        return {}
    return result
