"""Copy a repository into the workspace: regular files only, by one documented rule.

The rule: a regular file with one link is copied (content and executable bit; modes
become 0644/0755 so the sandbox user can read them). Everything else is skipped and
listed in ``skipped``, never followed and never opened: symbolic links, hard-linked
files (``st_nlink > 1``: one could alias a file outside the repository), devices,
FIFOs, sockets, names that are not UTF-8, ``.git``, and Python bytecode
(``__pycache__``, ``*.pyc``, ``*.pyo``: an "unchecked" .pyc would run instead of the
source the model reads and edits). A tree over the limits is refused as a whole.

The copy is read and written through folder descriptors (``openat``/``mkdirat``), never
through a path joined under the target: a tree nested past PATH_MAX below a long target
(the service's copy folder) is copied as it is below a short one (SR-13 F7); only the
nesting limit (``fsops.MAX_WALK_DEPTH``) refuses a deep tree, the same everywhere.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.errors import ToolDenied, UsageError, WorkspaceError
from sandbox_agent.workspace import fsops
from sandbox_agent.workspace.hashing import is_excluded

MiB = 1024 * 1024
DEFAULT_MAX_FILES = 10_000
DEFAULT_MAX_TOTAL_BYTES = 100 * MiB
DEFAULT_MAX_FILE_BYTES = 10 * MiB
DEFAULT_MAX_ENTRIES = 50_000
BYTECODE_DIRS = frozenset({"__pycache__"})
BYTECODE_SUFFIXES = (".pyc", ".pyo")


class WorkspaceLimits(BaseModel):
    """Size limits of the repository copy; a repository over any of them is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_files: int = Field(DEFAULT_MAX_FILES, ge=1)
    """Regular files copied."""
    max_total_bytes: int = Field(DEFAULT_MAX_TOTAL_BYTES, ge=1)
    """Sum of the sizes of the files copied."""
    max_file_bytes: int = Field(DEFAULT_MAX_FILE_BYTES, ge=1)
    """Size of the largest single file."""
    max_entries: int = Field(DEFAULT_MAX_ENTRIES, ge=1)
    """Objects of every kind walked (files, folders, links, special files): folders and
    skipped objects cost time, inodes and memory (``skipped``) too."""


class SkippedEntry(NamedTuple):
    """An object of the source left out of the copy, and why."""

    path: str
    reason: str


_SKIP_REASONS: dict[str, str] = {
    "symlink": "symbolic link",
    "hardlink": "hard-linked file",
    "special": "device, FIFO or socket",
    "bad_name": "name is not UTF-8",
}


def is_skipped_name(relpath: str) -> bool:
    """True for ``.git`` and Python bytecode, left out of the copy silently by name."""
    name = relpath.rsplit("/", 1)[-1]
    return is_excluded(relpath) or name in BYTECODE_DIRS or name.endswith(BYTECODE_SUFFIXES)


class OverLimits(UsageError):
    """A repository over one of the copy's limits: ``fact`` says which, the message adds
    what a user can change."""

    def __init__(self, fact: str, advice: str, *, at: str = "", size: bool = False) -> None:
        super().__init__(f"{fact}; {advice}")
        self.fact = fact
        self.at = at
        """The file the walk was at (a size limit)."""
        self.size = size
        """A size limit: a file's (``max_file_bytes``) or the total (``max_total_bytes``)."""


def copy_tree(
    source: Path, targets: tuple[Path, ...], limits: WorkspaceLimits
) -> list[SkippedEntry]:
    """Copy the regular files of ``source`` into each folder of ``targets`` (which exist).

    Returns:
        What was skipped, sorted by path.

    Raises:
        UsageError: the source is not a folder (``OverLimits``: is over a limit).
        WorkspaceError: the source could not be read.
    """
    try:
        source_fd = os.open(source, fsops.DIR_FLAGS)
    except OSError as error:
        raise UsageError(f"cannot open repository folder {source}: {error.strerror}") from None
    try:
        return copy_from(source_fd, targets, limits)
    finally:
        os.close(source_fd)


def copy_from(
    source_fd: int, targets: tuple[Path, ...], limits: WorkspaceLimits
) -> list[SkippedEntry]:
    """``copy_tree`` from an open folder descriptor instead of a path (the service copies
    a ``repo`` from the descriptor its check opened: ``service.repos.snapshot``).

    Raises:
        OverLimits: the source is over a limit.
        WorkspaceError: the source could not be read.
    """
    with ExitStack() as closing:
        roots: list[int] = []
        for target in targets:
            roots.append(_open_target(target))
            closing.callback(os.close, roots[-1])
        folders = _TargetFolders(tuple(roots))
        closing.callback(folders.close)
        return _copy(source_fd, folders, limits)


class _TargetFolders:
    """The open target folders of the walk's current branch: for each folder entered,
    its descriptor in every target. The walk goes depth first, folders before their
    contents, so an entry's parent is always on the stack (at most ``MAX_WALK_DEPTH``)."""

    def __init__(self, roots: tuple[int, ...]) -> None:
        self._stack: list[tuple[str, tuple[int, ...]]] = [("", roots)]

    def parent_of(self, relpath: str) -> tuple[int, ...]:
        """The descriptors of ``relpath``'s folder in every target, leaving the branches
        the walk is done with."""
        parent = relpath.rpartition("/")[0]
        while self._stack[-1][0] != parent:
            self._close(self._stack.pop()[1])
        return self._stack[-1][1]

    def enter(self, relpath: str, name: str) -> None:
        """Make the folder ``name`` (at ``relpath``) in every target and keep it open."""
        opened: list[int] = []
        try:
            for parent in self.parent_of(relpath):
                opened.append(_make_dir_at(parent, name))
        except BaseException:
            self._close(tuple(opened))
            raise
        self._stack.append((relpath, tuple(opened)))

    def close(self) -> None:
        """Close every folder entered (not the targets themselves)."""
        while len(self._stack) > 1:
            self._close(self._stack.pop()[1])

    @staticmethod
    def _close(fds: tuple[int, ...]) -> None:
        for fd in fds:
            os.close(fd)


def _copy(source_fd: int, folders: _TargetFolders, limits: WorkspaceLimits) -> list[SkippedEntry]:
    skipped: list[SkippedEntry] = []
    files = 0
    total = 0
    for entries, entry in enumerate(fsops.walk(source_fd, skip=is_skipped_name), start=1):
        if entries > limits.max_entries:
            raise OverLimits(
                f"the repository has more than {limits.max_entries} files, folders and links",
                "use a smaller repository or raise the entry limit",
            )
        if entry.kind == "dir":
            folders.enter(entry.relpath, entry.name)
        elif entry.kind == "too_deep":
            raise OverLimits(
                f"the repository is nested deeper than {fsops.MAX_WALK_DEPTH} folders "
                f"at '{entry.relpath}'",
                "copy a shallower repository",
            )
        elif entry.kind != "file":
            skipped.append(SkippedEntry(entry.relpath, _SKIP_REASONS[entry.kind]))
        else:
            files += 1
            if files > limits.max_files:
                raise OverLimits(
                    f"the repository has more than {limits.max_files} files",
                    "use a smaller repository or raise the file limit",
                )
            total += entry.stat.st_size  # by size, before reading (SR-8 C8-5)
            _check_total(total, entry.relpath, limits)
            content = _read_source_file(entry, limits)
            total += len(content) - entry.stat.st_size
            _check_total(total, entry.relpath, limits)
            mode = 0o755 if entry.stat.st_mode & 0o111 else 0o644
            for parent in folders.parent_of(entry.relpath):
                _write_new_at(parent, entry.name, content, mode)
    return sorted(skipped)


def _check_total(total: int, relpath: str, limits: WorkspaceLimits) -> None:
    if total > limits.max_total_bytes:
        raise OverLimits(
            f"the repository holds more than {limits.max_total_bytes} bytes",
            "use a smaller repository or raise the size limit",
            at=relpath,
            size=True,
        )


def _read_source_file(entry: fsops.Entry, limits: WorkspaceLimits) -> bytes:
    if entry.stat.st_size > limits.max_file_bytes:
        raise _too_large(entry.relpath, limits)
    try:
        fd, _ = fsops.open_regular(entry.dir_fd, entry.name, entry.relpath)
    except ToolDenied as denied:
        raise WorkspaceError(
            f"'{entry.relpath}' changed during the copy: {denied.message}"
        ) from None
    try:
        content = fsops.read_fd(fd, limits.max_file_bytes)
    finally:
        os.close(fd)
    if len(content) > limits.max_file_bytes:
        raise _too_large(entry.relpath, limits)
    return content


def _too_large(relpath: str, limits: WorkspaceLimits) -> OverLimits:
    return OverLimits(
        f"'{relpath}' is larger than {limits.max_file_bytes} bytes",
        "remove it from the repository or raise the per-file limit",
        at=relpath,
        size=True,
    )


def make_dir(path: Path, mode: int = 0o755) -> None:
    """Make a new folder with exactly ``mode``: ``mkdir``'s mode is narrowed by the umask,
    and the sandbox user must be able to read every folder of the copy."""
    path.mkdir(mode=mode)
    path.chmod(mode)


def _open_target(path: Path) -> int:
    """A target folder (ours, made by the caller), opened to copy into."""
    try:
        return os.open(path, fsops.DIR_FLAGS)
    except OSError as error:
        raise WorkspaceError(f"cannot open the copy's folder {path}: {error.strerror}") from None


def _make_dir_at(parent_fd: int, name: str, mode: int = 0o755) -> int:
    """Make the new folder ``name`` in ``parent_fd`` with exactly ``mode`` (``make_dir``'s
    rule) and return it open."""
    os.mkdir(name, mode, dir_fd=parent_fd)
    fd = os.open(name, fsops.DIR_FLAGS, dir_fd=parent_fd)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_new_at(parent_fd: int, name: str, content: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, mode, dir_fd=parent_fd)
    fsops.write_all(fd, content, mode)
