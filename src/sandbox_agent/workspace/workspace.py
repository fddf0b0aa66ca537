"""The private, disposable copy of a repository that every tool works on."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from sandbox_agent.errors import UsageError, WorkspaceError
from sandbox_agent.workspace import diff
from sandbox_agent.workspace.copy import SkippedEntry, WorkspaceLimits, copy_tree, make_dir
from sandbox_agent.workspace.hashing import mounted_tree_sha256, tree_sha256
from sandbox_agent.workspace.owner import WORKSPACE_PREFIX, write_owner
from sandbox_agent.workspace.safefs import SafeFS

if TYPE_CHECKING:
    from sandbox_agent.sandbox.base import CancelToken

REPO_DIR = "repo"
OVER_LIMITS = b"over-the-limits\0"
BASE_DIR = "base"


class Workspace:
    """A 0700 temporary folder holding the repository copy (``root``) and its owner label.

    Use as a context manager; ``close`` removes everything and is idempotent.
    """

    def __init__(
        self,
        *,
        folder: Path,
        source: Path,
        sha256_before: str,
        skipped: list[SkippedEntry],
        limits: WorkspaceLimits | None = None,
        sha256_copy: str = "",
    ) -> None:
        """Not for callers: use ``Workspace.create``."""
        self.folder = folder
        self.root = folder / REPO_DIR
        self.base = folder / BASE_DIR
        self.source = source
        self.sha256_before = sha256_before
        self.sha256_copy = sha256_copy
        """``mounted_tree_sha256`` of the copy as made (its base tree): what the run was
        given, whatever the original held between its hash and its copy (SR-11 R7)."""
        self.skipped = skipped
        """Objects of the source left out of the copy (links, special files, ...)."""
        self.limits = limits or WorkspaceLimits()
        """The limits the original was copied under; its hash at the end keeps to them."""
        self.fs = SafeFS(self.root)
        self._closed = False

    @classmethod
    def create(
        cls,
        source: Path,
        *,
        limits: WorkspaceLimits | None = None,
        base_dir: Path | None = None,
    ) -> Workspace:
        """Hash ``source``, then copy its regular files into a new private workspace.

        Args:
            source: the repository folder (a fixture or ``--repo``); never modified.
            limits: size limits of the copy (``WorkspaceLimits()`` by default).
            base_dir: where to make the workspace; the system temporary folder by default.

        Raises:
            UsageError: ``source`` is not a folder, or is over a limit.
            WorkspaceError: the copy could not be made.
        """
        source = Path(source).resolve()
        if not source.is_dir():
            raise UsageError(f"repository {source} is not a folder; give a folder to copy")
        limits = limits or WorkspaceLimits()
        sha256_before = tree_sha256(source, limits=limits)
        try:
            folder = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX, dir=base_dir))
        except OSError as error:
            raise WorkspaceError(f"cannot create a workspace folder: {error}") from None
        try:
            folder.chmod(0o700)
            write_owner(folder)
            for name in (REPO_DIR, BASE_DIR):
                make_dir(folder / name)
            skipped = copy_tree(source, (folder / REPO_DIR, folder / BASE_DIR), limits)
            sha256_copy = mounted_tree_sha256(folder / BASE_DIR)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(
            folder=folder,
            source=source,
            sha256_before=sha256_before,
            skipped=skipped,
            limits=limits,
            sha256_copy=sha256_copy,
        )

    def source_sha256_now(self) -> str:
        """Hash the original again (compare with ``sha256_before``).

        Bounded by the copy's limits: an original that grew past them during the run
        gets a digest of that fact, which differs from ``sha256_before`` (it was within
        them), never an unbounded read (SR-8 C8-5).

        Raises:
            WorkspaceError: the original can no longer be read.
        """
        return source_sha256(self.source, self.limits)

    def diff(
        self, *, limits: diff.DiffLimits | None = None, cancel: CancelToken | None = None
    ) -> str:
        """Unified diff of the copy against the repository as copied, sorted by path;
        bounded by ``limits``, cancellation and the deadline (``diff.unified_diff``)."""
        return diff.unified_diff(self.base, self.root, limits=limits, cancel=cancel)

    def files_changed(self) -> list[str]:
        """Sorted relative paths added, modified or deleted in the copy."""
        return diff.changed_paths(self.base, self.root)

    def close(self) -> None:
        """Remove the workspace folder. Idempotent."""
        if self._closed:
            return
        self._closed = True
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def source_sha256(source: Path, limits: WorkspaceLimits) -> str:
    """``tree_sha256`` of an original within ``limits``; over them, the digest of the refusal.

    Raises:
        WorkspaceError: the original cannot be read.
    """
    try:
        return tree_sha256(source, limits=limits)
    except UsageError as error:
        return hashlib.sha256(OVER_LIMITS + str(error).encode()).hexdigest()
