"""The ``wait`` phase: PID 1's frames until exit, the host's deadline, cancellation.

The host polls every ``POLL_S``; on cancellation, on its own deadline (the workload's
timeout plus PID 1's kill grace plus a margin), on the run's deadline
(``CancelToken.deadline``: the run's wall clock, SR-13 F3) or on a framing error it kills
the container; a run's deadline that passes before the go withholds the go. Memory stays
bounded: one Docker header, one frame, output up to the budget, 4 KiB of PID 1's own
stderr.
"""

from __future__ import annotations

import time
from typing import Any

from sandbox_agent.errors import DockerUnavailable
from sandbox_agent.sandbox.base import CancelToken, Diagnostics, PreparedSandbox, SandboxResult
from sandbox_agent.sandbox.docker import cleanup
from sandbox_agent.sandbox.docker.attach import AttachedStream
from sandbox_agent.sandbox.docker.classify import RunFacts, classify, classify_docker_error
from sandbox_agent.sandbox.docker.diagnostics import bounded, docker_state, elapsed_ms
from sandbox_agent.sandbox.docker.records import exit_facts
from sandbox_agent.sandbox.docker.spec import KILL_GRACE_S
from sandbox_agent.sandbox.docker.stream import (
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
    """A container whose PID 1 runs, the attach stream its frames arrive on, and what
    has been read from it so far (a pre-started sandbox is read up to its attestation)."""

    def __init__(self, prepared: PreparedSandbox, stream: AttachedStream) -> None:
        self.prepared = prepared
        self.stream = stream
        self.phase_ms: dict[str, float] = dict(prepared.phase_ms)
        self.started_at = time.monotonic()
        request = prepared.request
        self.reader = FrameReader(
            prepared.nonce, request.runtime, request.limits.output_budget_bytes
        )
        self.demux = DockerStreamDemux()
        self.pid1_stderr = bytearray()
        self.attest_ms: float | None = None
        self.go_at: float | None = None
        """When the host sent its go: the workload's clock starts here."""
        self.go_decided = False
        self.killed_at: float | None = None
        self.kill_failure: str | None = None
        self.cancelled = False
        self.host_timeout = False
        self.run_deadline = False
        """The run's deadline (its wall clock) passed while it ran, and the host killed it."""

    @classmethod
    def attach(cls, api: Any, prepared: PreparedSandbox) -> StartedSandbox:
        """Attach to the (not yet started) container.

        Raises:
            docker.errors.APIError: the daemon refused the attach.
        """
        return cls(prepared, AttachedStream(api, prepared.container_id))

    def mark_started(self, phase_ms: dict[str, float]) -> None:
        """Record the phases so far; the start-up clock starts now."""
        self.phase_ms = dict(phase_ms)
        self.started_at = time.monotonic()

    @property
    def ready(self) -> bool:
        """Attested by PID 1 and accepted by the host, go not yet sent (pre-started)."""
        return self.reader.attested and not self.go_decided and self.killed_at is None

    def go(self) -> None:
        """Send the go: PID 1 forks the workload now."""
        self.go_decided = True
        self.go_at = time.monotonic()
        self.stream.send_go()

    def withhold(self) -> None:
        """Never send the go: PID 1 reads EOF and exits having run nothing."""
        self.go_decided = True
        self.stream.close_stdin()

    def close(self) -> None:
        self.stream.close()


def _host_deadline(started: StartedSandbox) -> float:
    limits = started.prepared.request.limits
    clock = started.go_at if started.go_at is not None else started.started_at
    return clock + limits.timeout_s + KILL_GRACE_S + HOST_DEADLINE_MARGIN_S


def _decide_go(started: StartedSandbox, cancel: CancelToken, *, hold: bool) -> bool:
    """Once the attestation is in and nothing is decided: the go, or a withheld one
    (record not accepted, or cancelled), or with ``hold`` a pause before the go.

    Returns:
        True when reading must pause here (``hold``), the sandbox then ``ready``.
    """
    reader = started.reader
    if started.go_decided or started.killed_at is not None or not reader.attestation_seen:
        return False
    if started.attest_ms is None:
        started.attest_ms = elapsed_ms(started.started_at)
    if not reader.attested or cancel.cancelled or cancel.deadline_passed():
        started.withhold()
        return False
    if hold:
        return True
    started.go()
    return False


def read_frames(
    api: Any, started: StartedSandbox, cancel: CancelToken, *, hold: bool = False
) -> None:
    """Feed the attach stream to the reader until it ends; kill on cancel, deadline, bad frames.

    At the attestation the host decides: a valid one gets the go, any other closes
    PID 1's stdin. With ``hold``, a valid one returns instead, go not sent (the sandbox
    is then ``ready``, to be resumed by a later call without ``hold``).
    """
    prepared = started.prepared
    reader = started.reader
    _decide_go(started, cancel, hold=hold)  # a pre-started sandbox resumed here
    while True:
        now = time.monotonic()
        if started.killed_at is None:
            started.cancelled = cancel.cancelled
            started.host_timeout = not started.cancelled and now >= _host_deadline(started)
            started.run_deadline = not started.cancelled and cancel.deadline_passed()
            if (
                started.cancelled
                or started.host_timeout
                or started.run_deadline
                or reader.framing_error is not None
            ):
                started.kill_failure = cleanup.kill(api, prepared.container_id)
                started.killed_at = now
        elif now - started.killed_at > DRAIN_AFTER_KILL_S:
            return
        data = started.stream.recv(POLL_S)
        if data is None:
            continue
        if not data:
            return
        for stream_id, piece in started.demux.feed(data):
            if stream_id == DOCKER_STDOUT:
                reader.feed(piece)
            elif len(started.pid1_stderr) < MAX_PID1_STDERR:
                room = MAX_PID1_STDERR - len(started.pid1_stderr)
                started.pid1_stderr.extend(piece[:room])
        if _decide_go(started, cancel, hold=hold):
            return


def wait_for_exit(api: Any, started: StartedSandbox, cancel: CancelToken) -> SandboxResult:
    """Read until PID 1's stream ends, collect Docker's exit state, classify.

    Raises:
        DockerUnavailable: the daemon stopped answering.
    """
    prepared = started.prepared
    request = prepared.request
    read_frames(api, started, cancel)
    reader = started.reader
    reader.finish()
    ended = time.monotonic()
    phase_ms = started.phase_ms
    if started.go_at is None:  # no go: everything after start was start-up
        phase_ms["attest"] = round((ended - started.started_at) * 1000, 2)
        phase_ms["run"] = 0.0
    else:
        phase_ms["attest"] = started.attest_ms or 0.0
        phase_ms["run"] = round((ended - started.go_at) * 1000, 2)
    inspect = _exit_state(api, prepared.container_id)
    status_text, exit_code, oom_flag = docker_state(inspect)
    facts = RunFacts(
        host_timeout=started.host_timeout,
        cancelled=started.cancelled,
        run_deadline=started.run_deadline,
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
    if started.kill_failure:
        detail.append(f"kill failed: {started.kill_failure}")
    if started.pid1_stderr:
        detail.append("pid1 stderr: " + bytes(started.pid1_stderr).decode("utf-8", "replace"))
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
        attestation_checks=reader.attestation_checks,
        exit_report=exit_facts(report) if report else None,
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
