"""One digest of a folder tree: sha256 over sorted relative path, type, mode and content.

Used on the user's original before and after a run, to prove it unchanged. Nothing is
followed or opened in a way that can hang: links are hashed by their target text,
devices, FIFOs and sockets by type and mode only. Names that are not UTF-8 (never
copied) are covered like any other, content and subtree included. ``.git`` is left out (as from the
copy), because routine git commands rewrite ``.git/index`` without changing the tree.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sandbox_agent.errors import ToolDenied, UsageError, WorkspaceError
from sandbox_agent.workspace import fsops

EXCLUDED_NAMES = frozenset({".git"})


def is_excluded(relpath: str) -> bool:
    """True for paths left out of both the copy and the digest (any ``.git``)."""
    return relpath.rsplit("/", 1)[-1] in EXCLUDED_NAMES


def tree_sha256(path: Path, *, max_entries: int | None = None) -> str:
    """The hex sha256 of the tree at ``path`` (see the module docstring for what it covers).

    Args:
        path: the folder.
        max_entries: refuse a tree with more objects than this (None: no bound).

    Raises:
        WorkspaceError: ``path`` is not a folder, or a file could not be read.
        UsageError: the tree has more than ``max_entries`` objects.
    """
    try:
        root_fd = os.open(path, fsops.DIR_FLAGS)
    except OSError as error:
        raise WorkspaceError(f"cannot open folder {path} to hash it: {error.strerror}") from None
    digest = hashlib.sha256()
    try:
        for count, entry in enumerate(
            fsops.walk(root_fd, skip=is_excluded, bad_names=False), start=1
        ):
            if max_entries is not None and count > max_entries:
                raise UsageError(
                    f"{path} has more than {max_entries} files, folders and links; "
                    "use a smaller repository or raise the entry limit"
                )
            digest.update(_record(entry))
    finally:
        os.close(root_fd)
    return digest.hexdigest()


def _record(entry: fsops.Entry) -> bytes:
    mode = f"{entry.stat.st_mode:o}"
    if entry.kind in ("file", "hardlink"):
        content = _file_sha256(entry)
    elif entry.kind == "symlink":
        target = os.readlink(entry.name, dir_fd=entry.dir_fd)
        content = hashlib.sha256(os.fsencode(target)).hexdigest()
    else:
        content = ""
    path = os.fsencode(entry.relpath)
    return b"\0".join([entry.kind.encode(), path, mode.encode(), content.encode()]) + b"\n"


def _file_sha256(entry: fsops.Entry) -> str:
    try:
        fd, _ = fsops.open_regular(entry.dir_fd, entry.name, entry.relpath, allow_hardlink=True)
    except ToolDenied as denied:
        raise WorkspaceError(
            f"'{entry.relpath}' changed while it was hashed: {denied.message}"
        ) from None
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, fsops.READ_CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
