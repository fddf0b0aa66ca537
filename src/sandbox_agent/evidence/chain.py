"""Walking a run's hash-chained trace, line by line, to the first event that does not verify.

The format is the trace writer's (``sandbox_agent.trace.writer``): one JSON object per
line, ``seq`` counting from 0, ``prev_sha256`` the SHA-256 of the previous line's exact
bytes without its newline (64 zeros on the first line). This walk is written apart from
the writer on purpose: the verifier must not share the writer's bugs.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

TRACE_FILE = "trace.jsonl"
GENESIS_SHA256 = "0" * 64


class BadEvent(BaseModel):
    """The first trace event that does not verify."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: int
    """1-based line number in ``trace.jsonl``."""
    seq: int | None
    """The ``seq`` the line claims, when it has one."""
    reason: str


class ChainWalk(NamedTuple):
    """What walking the chain established."""

    events: int
    head_sha256: str | None
    """SHA-256 of the last line, None for an empty or missing trace."""
    first_bad: BadEvent | None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _check_line(
    raw: bytes, number: int, previous_sha256: str, run_id: str | None
) -> BadEvent | None:
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deep (SR-11 R3)
        event = None
    if not isinstance(event, dict):
        return BadEvent(line=number, seq=None, reason="not a JSON object")
    seq = event.get("seq")
    claimed = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    if claimed != number - 1:
        return BadEvent(
            line=number,
            seq=claimed,
            reason=f"seq {seq!r} where {number - 1} was expected: "
            "a line was removed, inserted or reordered before it",
        )
    if event.get("prev_sha256") != previous_sha256:
        if number == 1:
            why = "the first line must carry 64 zeros: lines were removed from the start"
        else:
            why = (
                f"does not match the hash of line {number - 1} (seq {number - 2}): "
                f"line {number - 1} was changed, or this line's prev_sha256 was"
            )
        return BadEvent(line=number, seq=claimed, reason=f"prev_sha256 {why}")
    if run_id is not None and event.get("run_id") != run_id:
        return BadEvent(
            line=number,
            seq=claimed,
            reason=f"run_id {event.get('run_id')!r} is not the sealed run's {run_id!r}",
        )
    return None


MAX_EVIDENCE_FILE_BYTES = 256 * 1024 * 1024
"""No file of a RUN_DIR is read when larger (by ``st_size``, before reading): a replaced
trace or result of terabytes is a failed check, not a crash (issue 20, SR-8 C8-6)."""


def read_bounded(path: Path, limit: int = MAX_EVIDENCE_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, refused by size before any read.

    Raises:
        OSError: unreadable, not a regular file, or larger than ``limit`` (``EFBIG``).
    """
    # Opened without blocking, then refused unless regular: a FIFO planted in place of a
    # file would otherwise block the open, and the reader with it, for ever (SR-11 F5).
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        size = info.st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"{size} bytes, more than {limit}")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit} bytes")
    return data


def walk_chain(path: Path, *, run_id: str | None = None) -> ChainWalk:
    """Check every line of the trace at ``path``; stop at the first that does not verify.

    Args:
        path: the ``trace.jsonl`` file.
        run_id: the run every event must name (the sealed result's), or None to skip.
    """
    try:
        data = read_bounded(path)
    except OSError as error:
        reason = f"cannot read {path.name}: {error.strerror}"
        return ChainWalk(0, None, BadEvent(line=0, seq=None, reason=reason))
    lines = _lines(data)
    if not lines:
        return ChainWalk(0, None, BadEvent(line=0, seq=None, reason="the trace is empty"))
    previous = GENESIS_SHA256
    for number, raw in enumerate(lines, start=1):
        bad = _check_line(raw, number, previous, run_id)
        if bad is not None:
            return ChainWalk(number - 1, sha256_hex(lines[-1]), bad)
        previous = sha256_hex(raw)
    return ChainWalk(len(lines), previous, None)
