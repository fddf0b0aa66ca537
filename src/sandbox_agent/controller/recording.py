"""A sandbox backend wrapper that keeps the evidence digests of every run it relays."""

from __future__ import annotations

from typing_extensions import override

from sandbox_agent.sandbox.base import CancelToken, SandboxBackend, SandboxRequest, SandboxResult


class RecordingBackend(SandboxBackend):
    """Relays to ``inner`` and records each result (for the sealed evidence record)."""

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.results: list[SandboxResult] = []

    @override
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        result = self.inner.run(request, cancel)
        self.results.append(result)
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
