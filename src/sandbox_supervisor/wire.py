"""Writing frames to PID 1's stdout: whole frames only, whatever ``write`` returns."""

from __future__ import annotations

import os

from sandbox_supervisor import protocol

TYPE_CHECKING = False  # typing is not imported at run time: PID 1 start-up (issue 3)
if TYPE_CHECKING:
    from typing import Any


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, continuing after partial writes (EINTR is retried by Python).

    Raises:
        OSError: the reader went away (EPIPE) or the descriptor is unusable.
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_data(fd: int, kind: bytes, data: bytes) -> None:
    """Workload bytes as one or more data frames of at most ``MAX_FRAME_PAYLOAD``."""
    for start in range(0, len(data), protocol.MAX_FRAME_PAYLOAD):
        chunk = data[start : start + protocol.MAX_FRAME_PAYLOAD]
        write_all(fd, protocol.encode_frame(kind, chunk))


def write_record(fd: int, kind: bytes, record: dict[str, Any]) -> None:
    """A control record (``A`` or ``X``) as one frame."""
    write_all(fd, protocol.encode_record(kind, record))
