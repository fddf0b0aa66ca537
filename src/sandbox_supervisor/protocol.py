"""The wire format between PID 1 and the host: length-prefixed frames on PID 1's stdout.

Every byte PID 1 writes to its stdout belongs to a frame::

    kind (1 byte) | length (4 bytes, big-endian) | payload (length bytes)

The workload never holds PID 1's stdout: its stdout and stderr are pipes that PID 1
reads and re-wraps in ``STDOUT``/``STDERR`` frames. Whatever the workload prints,
including a perfect copy of a control frame with the right nonce, arrives at the
host as the payload of a data frame, never as a frame of its own. That is what makes
the attestation and the exit report unforgeable from inside. The nonce arrives on
PID 1's stdin (``KIND_CONFIG``), not its command line, and PID 1 is another uid than
every workload process (``sandbox_supervisor.identity``). A runner forked from PID 1
holds a copy of its memory, nonce included; it cannot reach PID 1's stream with it.

Standard library only: this module runs inside the container and on the host.
"""

from __future__ import annotations

import struct

from sandbox_supervisor.fastjson import dumps_canonical

# typing and collections.abc are for the type checker only: PID 1 imports this module
# on every sandbox run and its start-up is on each run's path (issue 3).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

KIND_ATTESTATION = b"A"
KIND_STDOUT = b"1"
KIND_STDERR = b"2"
KIND_EXIT = b"X"
KINDS = frozenset({KIND_ATTESTATION, KIND_STDOUT, KIND_STDERR, KIND_EXIT})
CONTROL_KINDS = frozenset({KIND_ATTESTATION, KIND_EXIT})

HEADER = struct.Struct(">cI")
MAX_FRAME_PAYLOAD = 64 * 1024
"""No frame but the exit report is longer; a longer length field is a framing error."""

GO = b"G"
"""The one byte the host writes on PID 1's stdin once it has accepted the attestation.

PID 1 forks nothing before it: not when its own checks fail, not when the host's check
of the record fails (the host then closes stdin), not when the host keeps the container
ready for later (a pre-started sandbox) and then discards it."""

KIND_CONFIG = b"C"
"""The one frame the host writes on PID 1's stdin before anything else: PID 1's config
(canonical JSON). Not on the command line, where every process of the container could
read its nonce in ``/proc/1/cmdline`` (issue 15, G1); PID 1 holds it only in memory."""
MAX_CONFIG_BYTES = 1024 * 1024
"""A config frame's payload is at most this (a held-out check's source travels in it)."""
CONFIG_TIMEOUT_S = 60.0
"""PID 1 waits this long after its start for the config, then exits having run nothing."""


def encode_config(config: bytes) -> bytes:
    """The config frame the host writes on PID 1's stdin.

    Raises:
        ValueError: the config is longer than ``MAX_CONFIG_BYTES``.
    """
    if len(config) > MAX_CONFIG_BYTES:
        raise ValueError(f"config of {len(config)} bytes, more than {MAX_CONFIG_BYTES}")
    return HEADER.pack(KIND_CONFIG, len(config)) + config


EXIT_WORKLOAD_OTHER = 121
"""PID 1's exit code after a complete run whose workload exited with 121-255 (a signal
included); the exact code is in the exit report."""


def pid1_exit_code(workload_exit_code: int) -> int:
    """PID 1's own exit code once it has written the exit report of a complete run.

    The workload's code when it is below ``EXIT_WORKLOAD_OTHER``, else that constant. So
    PID 1 never ends with 125 (refused), 126 (its own crash) or 128+N (killed by signal
    N) after a complete run, and the host's agreement check (exit report against
    Docker's exit code) also proves that PID 1 itself reached its normal end: a copy of
    an exit record that a workload managed to put on PID 1's stream (under runsc it can
    open ``/proc/1/fd/1``) and then a killed PID 1 can never agree with Docker.
    """
    if 0 <= workload_exit_code < EXIT_WORKLOAD_OTHER:
        return workload_exit_code
    return EXIT_WORKLOAD_OTHER


RUNNER_REPORT_FD = 3
"""The workload's fd on which the trusted runner wrapper writes its structured report."""

MAX_RUNNER_REPORT_BYTES = 4 * 1024 * 1024
"""The runner report on fd 3, and the same report re-encoded canonically in the exit
report: room for the test ids of a large suite (issue 20, SR-8 C8-1)."""
MAX_EXIT_PAYLOAD = MAX_RUNNER_REPORT_BYTES + 64 * 1024
"""The exit report's frame only: the runner report plus PID 1's own fields (bounded)."""


def max_payload(kind: bytes) -> int:
    """The longest payload a frame of ``kind`` may carry."""
    return MAX_EXIT_PAYLOAD if kind == KIND_EXIT else MAX_FRAME_PAYLOAD


class FramingError(ValueError):
    """The stream is not a well-formed sequence of frames."""


def encode_frame(kind: bytes, payload: bytes) -> bytes:
    """One frame. Raises ValueError for an unknown kind or an oversized payload."""
    if kind not in KINDS:
        raise ValueError(f"unknown frame kind {kind!r}")
    if len(payload) > max_payload(kind):
        raise ValueError("frame payload too large")
    return HEADER.pack(kind, len(payload)) + payload


def encode_record(kind: bytes, record: dict[str, Any]) -> bytes:
    """A control frame holding one JSON object (canonical: sorted keys, no spaces)."""
    if kind not in CONTROL_KINDS:
        raise ValueError(f"{kind!r} is not a control frame kind")
    return encode_frame(kind, canonical_json(record))


def canonical_json(record: dict[str, Any]) -> bytes:
    """The canonical encoding used for records and their digests."""
    # json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True), by
    # the same C encoder, without importing json into PID 1 (see ``fastjson``).
    return dumps_canonical(record).encode()


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, collect complete frames.

    Raises FramingError on an unknown kind or an oversized length, at once, so a
    hostile stream cannot make the host buffer more than one frame.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Add bytes; yield each ``(kind, payload)`` that is now complete."""
        self._buffer.extend(data)
        while len(self._buffer) >= HEADER.size:
            kind, length = HEADER.unpack_from(self._buffer)
            if kind not in KINDS:
                raise FramingError(f"unknown frame kind {kind!r}")
            if length > max_payload(kind):
                raise FramingError(f"frame length {length} exceeds {max_payload(kind)}")
            end = HEADER.size + length
            if len(self._buffer) < end:
                return
            payload = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            yield kind, payload

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered (non-zero at end of stream is an error)."""
        return len(self._buffer)
