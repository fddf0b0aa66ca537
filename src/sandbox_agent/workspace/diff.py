"""What changed in the workspace copy against the pristine copy taken at the start.

The pristine copy (``base/``) is never mounted anywhere or written after the copy, so
the diff does not depend on the user's original staying put.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.errors import WorkspaceError
from sandbox_agent.workspace import fsops


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


def unified_diff(base: Path, current: Path) -> str:
    """A unified diff (``a/`` and ``b/`` prefixes) of every changed path, sorted by path.

    Text is UTF-8; anything else is reported as ``Binary files ... differ``; a link or
    special file that appeared is reported by kind, never read.
    """
    before = snapshot(base)
    after = snapshot(current)
    chunks: list[str] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        chunks.append(_file_diff(path, old, new))
    return "".join(chunks)


def _file_diff(path: str, old: _Object | None, new: _Object | None) -> str:
    old_name = f"a/{path}" if old is not None else "/dev/null"
    new_name = f"b/{path}" if new is not None else "/dev/null"
    for side in (old, new):
        if side is not None and side.kind != "file":
            return f"{side.kind} {path} differs (not a regular file)\n"
    old_text = _text(old.content if old else b"")
    new_text = _text(new.content if new else b"")
    if old_text is None or new_text is None:
        return f"Binary files {old_name} and {new_name} differ\n"
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=old_name,
        tofile=new_name,
    )
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


def _text(content: bytes) -> str | None:
    if b"\x00" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None
