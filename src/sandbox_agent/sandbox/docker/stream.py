"""Reading PID 1's output: Docker's attach multiplexing, then the protocol's frames.

Both layers are incremental and bounded: the demuxer keeps at most one 8-byte header,
the frame decoder at most one frame, and workload output is kept up to the budget only.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator

from sandbox_agent.sandbox.base import AttestationCheck, RunnerReport, Runtime
from sandbox_agent.sandbox.docker.records import (
    ExitReport,
    attestation_checks,
    check_attestation,
    check_exit_report,
)
from sandbox_supervisor import protocol

DOCKER_HEADER = struct.Struct(">BxxxI")
DOCKER_STDOUT = 1
DOCKER_STDERR = 2
MAX_PID1_STDERR = 4096
"""PID 1's own stderr (crash text only) kept as diagnostics."""


class DockerStreamDemux:
    """Splits Docker's multiplexed (non-TTY) attach stream into ``(stream, bytes)`` pieces.

    Payload bytes are passed on as they arrive, so a large chunk is never buffered whole.
    """

    def __init__(self) -> None:
        self._header = bytearray()
        self._stream = 0
        self._remaining = 0

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        """Add bytes from the socket; yield each piece of payload now available."""
        view = memoryview(data)
        while view:
            if self._remaining == 0:
                need = DOCKER_HEADER.size - len(self._header)
                self._header.extend(view[:need])
                view = view[need:]
                if len(self._header) == DOCKER_HEADER.size:
                    self._stream, self._remaining = DOCKER_HEADER.unpack(self._header)
                    self._header.clear()
                continue
            piece = bytes(view[: self._remaining])
            view = view[len(piece) :]
            self._remaining -= len(piece)
            yield self._stream, piece

    @property
    def pending(self) -> bool:
        """True when the stream stopped inside a header or a payload."""
        return bool(self._header) or self._remaining > 0


class FrameReader:
    """Applies the frame order of docs/SANDBOX_PROTOCOL.md to PID 1's stdout.

    One ``A`` first, then data frames, then one ``X`` last. The first violation is kept
    in ``framing_error`` and everything after it is ignored.
    """

    def __init__(self, nonce: str, runtime: Runtime, output_budget: int) -> None:
        self._nonce = nonce
        self._runtime = runtime
        self._budget = output_budget
        self._decoder = protocol.FrameDecoder()
        self.output = bytearray()
        self.output_bytes = 0
        self.framing_error: str | None = None
        self.attestation_seen = False
        self.attested = False
        self.attestation_status = "missing"
        self.attestation_sha256: str | None = None
        self.attestation_checks: list[AttestationCheck] = []
        self.exit_report: ExitReport | None = None
        self.exit_status = "missing"
        self.exit_report_sha256: str | None = None
        self.runner_report: RunnerReport | None = None
        self._exit_seen = False

    def feed(self, data: bytes) -> None:
        """Add bytes of PID 1's stdout."""
        if self.framing_error is not None:
            return
        try:
            for kind, payload in self._decoder.feed(data):
                self._frame(kind, payload)
                if self.framing_error is not None:
                    return
        except protocol.FramingError as error:
            self._fail(str(error))

    def finish(self) -> None:
        """The stream ended: a partial frame left over is a framing error."""
        if self.framing_error is None and self._decoder.pending:
            self._fail(f"stream ended inside a frame ({self._decoder.pending} bytes)")

    def _fail(self, why: str) -> None:
        self.framing_error = why[:200]
        if self.exit_report is not None:
            self.exit_report = None
            self.runner_report = None
            self.exit_status = f"malformed: framing error after the exit report: {why[:120]}"

    def _frame(self, kind: bytes, payload: bytes) -> None:
        if self._exit_seen:
            self._fail(f"frame {kind!r} after the exit report")
        elif kind == protocol.KIND_ATTESTATION:
            if self.attestation_seen:
                self._fail("a second attestation")
                return
            self.attestation_seen = True
            self.attestation_sha256 = hashlib.sha256(payload).hexdigest()
            self.attested, self.attestation_status = check_attestation(
                payload, self._nonce, self._runtime
            )
            self.attestation_checks = attestation_checks(payload)
        elif not self.attestation_seen:
            self._fail(f"frame {kind!r} before the attestation")
        elif kind == protocol.KIND_EXIT:
            self._exit_seen = True
            self.exit_report_sha256 = hashlib.sha256(payload).hexdigest()
            self.exit_report, self.exit_status, self.runner_report = check_exit_report(
                payload, self._nonce, self.output_bytes
            )
        else:
            self.output_bytes += len(payload)
            if self.output_bytes > self._budget:
                self._fail(f"more output than the budget of {self._budget} bytes")
                return
            self.output.extend(payload)
