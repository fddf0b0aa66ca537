"""One digest of a folder tree: sha256 over sorted relative path, type, mode and content.

Two uses, two functions:

- ``tree_sha256``: the user's original, before and after a run, to prove it unchanged.
  Version-control folders (``.git``, ``.hg``, ``.svn``, at any depth) are left out, as
  from the copy, because routine VCS commands rewrite their files (``.git/index``)
  without changing the tree. With ``limits`` it refuses by size (``st_size``, before
  reading anything: a sparse 20 GiB file costs nothing to refuse and a minute to read).
- ``mounted_tree_sha256``: the workspace, behind a reused verdict. It leaves nothing out:
  it covers exactly what the sandbox mounts (issue 20, SR-8 C8-2).

Nothing is followed or opened in a way that can hang: links are hashed by their target
text, devices, FIFOs and sockets by type and mode only. Names that are not UTF-8 (never
copied) are covered like any other, content and subtree included.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from sandbox_agent.errors import ToolDenied, UsageError, WorkspaceError
from sandbox_agent.workspace import fsops

VCS_DIR_NAMES = frozenset({".git", ".hg", ".svn"})
"""Version-control folders, left out of the copy and of the original's digest at any depth
(and protected, so the model cannot make one in the workspace either)."""
EXCLUDED_NAMES = VCS_DIR_NAMES


class TreeLimits(Protocol):
    """The limits a digest refuses a tree by: ``copy.WorkspaceLimits`` is one (a Protocol,
    so the copy can use this module's rules without this module importing the copy)."""

    @property
    def max_entries(self) -> int: ...
    @property
    def max_file_bytes(self) -> int: ...
    @property
    def max_total_bytes(self) -> int: ...


def is_excluded(relpath: str) -> bool:
    """True for paths left out of both the copy and the original's digest (a VCS folder)."""
    return relpath.rsplit("/", 1)[-1] in EXCLUDED_NAMES


def tree_sha256(
    path: Path, *, max_entries: int | None = None, limits: TreeLimits | None = None
) -> str:
    """The hex sha256 of the original tree at ``path`` (VCS folders left out).

    Args:
        path: the folder.
        max_entries: refuse a tree with more objects than this (None: no bound).
        limits: refuse a tree over these limits (entries, and by ``st_size`` before any
            read: a file over ``max_file_bytes``, files over ``max_total_bytes`` in all).

    Raises:
        WorkspaceError: ``path`` is not a folder, or a file could not be read.
        UsageError: the tree is over ``max_entries`` or ``limits``.
    """
    return _digest(path, is_excluded, max_entries=max_entries, limits=limits)


def mounted_tree_sha256(path: Path) -> str:
    """The hex sha256 of everything under ``path``: what a sandbox mounting it sees.

    Raises:
        WorkspaceError: ``path`` is not a folder, or a file could not be read.
    """
    return _digest(path, None, max_entries=None, limits=None)


def _digest(
    path: Path,
    skip: Callable[[str], bool] | None,
    *,
    max_entries: int | None,
    limits: TreeLimits | None,
) -> str:
    if limits is not None:
        max_entries = limits.max_entries if max_entries is None else max_entries
    try:
        root_fd = os.open(path, fsops.DIR_FLAGS)
    except OSError as error:
        raise WorkspaceError(f"cannot open folder {path} to hash it: {error.strerror}") from None
    digest = hashlib.sha256()
    total = 0
    try:
        for count, entry in enumerate(fsops.walk(root_fd, skip=skip, bad_names=False), start=1):
            if max_entries is not None and count > max_entries:
                raise UsageError(
                    f"{path} has more than {max_entries} files, folders and links; "
                    "use a smaller repository or raise the entry limit"
                )
            if limits is not None and entry.kind in ("file", "hardlink"):
                total += entry.stat.st_size
                _check_size(entry, total, limits)
            digest.update(_record(entry, limits))
    finally:
        os.close(root_fd)
    return digest.hexdigest()


def _check_size(entry: fsops.Entry, total: int, limits: TreeLimits) -> None:
    """Refuse by size, before the file is opened (SR-8 C8-5)."""
    if entry.stat.st_size > limits.max_file_bytes:
        raise UsageError(
            f"'{entry.relpath}' is larger than {limits.max_file_bytes} bytes; "
            "remove it from the repository or raise the per-file limit"
        )
    if total > limits.max_total_bytes:
        raise UsageError(
            f"the repository holds more than {limits.max_total_bytes} bytes; "
            "use a smaller repository or raise the size limit"
        )


def _record(entry: fsops.Entry, limits: TreeLimits | None) -> bytes:
    mode = f"{entry.stat.st_mode:o}"
    if entry.kind in ("file", "hardlink"):
        content = _file_sha256(entry, None if limits is None else limits.max_file_bytes)
    elif entry.kind == "symlink":
        target = os.readlink(entry.name, dir_fd=entry.dir_fd)
        content = hashlib.sha256(os.fsencode(target)).hexdigest()
    else:
        content = ""
    path = os.fsencode(entry.relpath)
    return b"\0".join([entry.kind.encode(), path, mode.encode(), content.encode()]) + b"\n"


def _file_sha256(entry: fsops.Entry, max_bytes: int | None) -> str:
    try:
        fd, _ = fsops.open_regular(entry.dir_fd, entry.name, entry.relpath, allow_hardlink=True)
    except ToolDenied as denied:
        raise WorkspaceError(
            f"'{entry.relpath}' changed while it was hashed: {denied.message}"
        ) from None
    digest = hashlib.sha256()
    read = 0
    try:
        while chunk := os.read(fd, fsops.READ_CHUNK):
            read += len(chunk)
            if max_bytes is not None and read > max_bytes:
                # It grew past the limit after its size was checked.
                raise UsageError(
                    f"'{entry.relpath}' is larger than {max_bytes} bytes; "
                    "remove it from the repository or raise the per-file limit"
                )
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
