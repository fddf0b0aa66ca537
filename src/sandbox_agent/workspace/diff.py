"""What changed in the workspace copy against the pristine copy taken at the start.

The pristine copy (``base/``) is never mounted anywhere or written after the copy, so
the diff does not depend on the user's original staying put.

The diff is bounded (issue 20, SR-8 C8-4): difflib is quadratic on a file whose many
distinct lines were reordered (a 10-second run once spent 93 s here, deaf to SIGTERM).
Each file's common first and last lines are set aside in linear time; the lines left
are diffed only when their count product is within ``DiffLimits.max_line_pairs``.
Between files the time budget, the size budget, cancellation and the run's deadline are
checked. A file past any of them is summarised on one line, never diffed unboundedly.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import override

from sandbox_agent.errors import WorkspaceError
from sandbox_agent.workspace import fsops

if TYPE_CHECKING:
    from sandbox_agent.sandbox.base import CancelToken

DEFAULT_MAX_DIFF_SECONDS = 10.0
DEFAULT_MAX_DIFF_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_DIFF_LINE_PAIRS = 4_000_000
"""About a second of difflib at its worst (2000 x 2000 reordered lines, measured)."""
CONTEXT_LINES = 3
NOT_DIFFED = "not diffed"


class DiffLimits(BaseModel):
    """Bounds on the final diff; a file past any of them is summarised, not diffed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_seconds: float = Field(DEFAULT_MAX_DIFF_SECONDS, gt=0, le=3600)
    """Time for the whole diff; files not reached by then are summarised."""
    max_bytes: int = Field(DEFAULT_MAX_DIFF_BYTES, ge=1024)
    """Size of the diff text; a file whose diff would pass it is summarised."""
    max_line_pairs: int = Field(DEFAULT_MAX_DIFF_LINE_PAIRS, ge=1)
    """Old lines x new lines of one file's changed region (common first and last lines
    set aside): difflib's work grows with this product."""


class _Object(NamedTuple):
    kind: str
    content: bytes


def snapshot(root: Path) -> dict[str, _Object]:
    """Every object under ``root``: regular files with their content, others by kind only.

    Raises:
        WorkspaceError: the folder cannot be read.
    """
    try:
        root_fd = os.open(root, fsops.DIR_FLAGS)
    except OSError as error:
        raise WorkspaceError(f"cannot open {root}: {error.strerror}") from None
    objects: dict[str, _Object] = {}
    try:
        for entry in fsops.walk(root_fd):
            if entry.kind == "dir":
                continue
            content = b""
            if entry.kind == "file":
                fd, _ = fsops.open_regular(entry.dir_fd, entry.name, entry.relpath)
                try:
                    content = fsops.read_fd(fd, entry.stat.st_size)
                finally:
                    os.close(fd)
            objects[entry.relpath] = _Object(entry.kind, content)
    finally:
        os.close(root_fd)
    return objects


def changed_paths(base: Path, current: Path) -> list[str]:
    """Sorted relative paths added, modified or deleted (or changed kind) in ``current``."""
    before = snapshot(base)
    after = snapshot(current)
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def unified_diff(
    base: Path,
    current: Path,
    *,
    limits: DiffLimits | None = None,
    cancel: CancelToken | None = None,
) -> str:
    """A unified diff (``a/`` and ``b/`` prefixes) of every changed path, sorted by path.

    Text is UTF-8; anything else is reported as ``Binary files ... differ``; a link or
    special file that appeared is reported by kind, never read. Within ``limits`` (see
    the module docstring); past them, or once ``cancel`` is cancelled or its deadline
    has passed, each remaining file is one ``not diffed`` line.
    """
    limits = limits or DiffLimits()
    before = snapshot(base)
    after = snapshot(current)
    ends_at = time.monotonic() + limits.max_seconds
    chunks: list[str] = []
    size = 0
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        why = _stop_reason(ends_at, cancel)
        chunk = _file_diff(path, old, new, limits) if why is None else None
        if chunk is not None and size + len(chunk) > limits.max_bytes:
            chunk, why = None, f"the diff is over {limits.max_bytes} bytes"
        if chunk is None:
            chunk = _summary(path, old, new, why or f"over {limits.max_line_pairs} line pairs")
        size += len(chunk)
        chunks.append(chunk)
    return "".join(chunks)


def _stop_reason(ends_at: float, cancel: CancelToken | None) -> str | None:
    if cancel is not None and cancel.cancelled:
        return "cancelled"
    if cancel is not None and cancel.deadline_passed():
        return "the run's wall clock ran out"
    if time.monotonic() >= ends_at:
        return "the diff's time budget ran out"
    return None


def _summary(path: str, old: _Object | None, new: _Object | None, why: str) -> str:
    def side(obj: _Object | None) -> str:
        if obj is None:
            return "absent"
        digest = hashlib.sha256(obj.content).hexdigest()[:16]
        return f"{obj.kind} of {len(obj.content)} bytes, sha256 {digest}"

    return f"diff {path}: {NOT_DIFFED} ({why}): {side(old)} -> {side(new)}\n"


def _file_diff(
    path: str, old: _Object | None, new: _Object | None, limits: DiffLimits
) -> str | None:
    """The file's diff text; None when its changed region is over ``max_line_pairs``."""
    old_name = f"a/{path}" if old is not None else "/dev/null"
    new_name = f"b/{path}" if new is not None else "/dev/null"
    for side in (old, new):
        if side is not None and side.kind != "file":
            return f"{side.kind} {path} differs (not a regular file)\n"
    old_text = _text(old.content if old else b"")
    new_text = _text(new.content if new else b"")
    if old_text is None or new_text is None:
        return f"Binary files {old_name} and {new_name} differ\n"
    lines = _bounded_unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        old_name,
        new_name,
        limits.max_line_pairs,
    )
    if lines is None:
        return None
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


def _bounded_unified_diff(
    a: list[str], b: list[str], fromfile: str, tofile: str, max_pairs: int
) -> list[str] | None:
    """``difflib.unified_diff`` of ``a`` and ``b``, with difflib run only on the lines
    between their common first and last lines, and only within ``max_pairs``."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    a_mid, b_mid = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    if len(a_mid) * len(b_mid) > max_pairs:
        return None
    opcodes: list[tuple[str, int, int, int, int]] = []
    if prefix:
        opcodes.append(("equal", 0, prefix, 0, prefix))
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_mid, b_mid).get_opcodes():
        opcodes.append((tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix))
    if suffix:
        opcodes.append(("equal", len(a) - suffix, len(a), len(b) - suffix, len(b)))
    return list(_format(a, b, _Opcodes(_merge_equal(opcodes)), fromfile, tofile))


class _Opcodes(difflib.SequenceMatcher[str]):
    """A matcher whose opcodes are given: its ``get_grouped_opcodes`` (the context
    grouping of ``difflib.unified_diff``) then works on the whole file's lines."""

    def __init__(self, opcodes: list[tuple[str, int, int, int, int]]) -> None:
        super().__init__(None, "", "")
        self._given = opcodes

    @override
    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:  # type: ignore[override]
        return self._given


def _merge_equal(
    opcodes: list[tuple[str, int, int, int, int]],
) -> list[tuple[str, int, int, int, int]]:
    merged: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal" and i1 == i2:
            continue  # empty
        if merged and merged[-1][0] == tag == "equal":
            _, start_a, _, start_b, _ = merged.pop()
            merged.append(("equal", start_a, i2, start_b, j2))
            continue
        merged.append((tag, i1, i2, j1, j2))
    return merged


def _format(
    a: list[str], b: list[str], matcher: difflib.SequenceMatcher[str], fromfile: str, tofile: str
) -> Iterator[str]:
    """difflib.unified_diff's own formatting of ``matcher``'s opcodes."""
    started = False
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A unified diff range, as difflib writes it."""
    beginning = start + 1
    length = stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _text(content: bytes) -> str | None:
    if b"\x00" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None
