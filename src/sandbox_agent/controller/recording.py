"""A sandbox backend wrapper that keeps the evidence digests of every run it relays, and
hands each run's evidence to the trace (``sandbox_run`` events)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typing_extensions import override

from sandbox_agent.sandbox.base import CancelToken, SandboxBackend, SandboxRequest, SandboxResult
from sandbox_supervisor.run_tests import COLLECT_ONLY
from sandbox_supervisor.spectrum import SPECTRUM_ARG


class RecordingBackend(SandboxBackend):
    """Relays to ``inner`` and records each result (for the sealed evidence record)."""

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.results: list[SandboxResult] = []
        self.on_result: Callable[[SandboxResult, str], None] | None = None
        """Called with each result and its purpose as it comes (the session writes them to
        the trace): ``baseline`` (the original's collect-only run) or ``tests``."""

    @override
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        result = self.inner.run(request, cancel)
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result, purpose(request))
        return result

    @override
    def reap(self) -> list[str]:
        return self.inner.reap()

    @override
    def prestart(self, request: SandboxRequest, count: int = 1) -> None:
        self.inner.prestart(request, count)

    @override
    def discard_prestarted(self) -> list[str]:
        return self.inner.discard_prestarted()

    @override
    def close(self) -> None:
        self.inner.close()

    def digests(self) -> dict[str, object]:
        """Image ID, spec, attestation and exit-report digests of every run, in order."""
        image_ids = [r.image_id for r in self.results if r.image_id]
        return {
            "image_id": image_ids[-1] if image_ids else None,
            "spec_sha256s": [r.spec_sha256 for r in self.results if r.spec_sha256],
            "attestation_sha256s": [
                r.attestation_sha256 for r in self.results if r.attestation_sha256
            ],
            "exit_report_sha256s": [
                r.exit_report_sha256 for r in self.results if r.exit_report_sha256
            ],
            "sandbox_runs": [
                {"status": r.status, "started": r.started, "runtime": r.runtime}
                for r in self.results
            ],
        }


def purpose(request: SandboxRequest) -> str:
    """What a sandbox run was for, as the trace says it: ``baseline`` for the original's
    collect-only run (issue 20, C8-1), ``spectrum`` for the repair strategy's spectrum
    run (a localisation hint), ``tests`` for a test run."""
    if COLLECT_ONLY in request.argv:
        return "baseline"
    return "spectrum" if SPECTRUM_ARG in request.argv else "tests"


def sandbox_run_fields(result: SandboxResult) -> dict[str, Any]:
    """One sandbox run's evidence for the trace's ``sandbox_run`` event: the
    classification, PID 1's attestation (each check), its exit report, the trusted
    runner's report, the runtime and the clean-up; never the workload's output."""
    diagnostics = result.diagnostics
    runner = result.runner_report
    return {
        "status": result.status,
        "reason": result.reason,
        "started": result.started,
        "runtime": result.runtime,
        "prestarted": result.prestarted,
        "attested": result.attested,
        "attestation": {
            "status": diagnostics.attestation,
            "checks": [check.model_dump() for check in result.attestation_checks],
            "sha256": result.attestation_sha256,
        },
        "exit_report": {
            "status": diagnostics.exit_report,
            **(result.exit_report or {}),
            "sha256": result.exit_report_sha256,
        },
        "runner_report": runner.model_dump() if runner else None,
        "output_bytes_kept": len(result.output),
        "output_truncated": result.output_truncated,
        "cleanup": result.cleanup,
        "image_id": result.image_id,
        "spec_sha256": result.spec_sha256,
        "phase_ms": result.phase_ms,
        "diagnostics": {
            "phase": diagnostics.phase,
            "docker_state": diagnostics.docker_state,
            "docker_exit_code": diagnostics.docker_exit_code,
            "verification": diagnostics.verification,
            "detail": diagnostics.detail,
        },
    }
