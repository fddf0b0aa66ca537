"""The folder ``view`` serves, read without ever leaving it.

Everything is read from one directory descriptor opened at start, one ``O_NOFOLLOW``
component at a time (``sandbox_agent.workspace.fsops``): a symbolic link, a device, a
FIFO or a ``..`` anywhere below the root is refused, never followed, and no path that
a file names (a result's ``trace_path``, a report's run records) is ever opened. A run
is addressed by its *key*: the ``/``-joined names of its folder below the root (``.``
for the root itself), checked lexically and then walked like any other path.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from typing import Literal, NamedTuple

from sandbox_agent.errors import ToolDenied, UsageError, WorkspaceError
from sandbox_agent.viewer.settings import ViewSettings
from sandbox_agent.workspace import fsops

RESULT_FILE = "result.json"
TRACE_FILE = "trace.jsonl"
DIFF_FILE = "diff.patch"
EVIDENCE_FILE = "evidence.json"
REPORT_FILE = "report.json"
RUN_FILES = (TRACE_FILE, RESULT_FILE, DIFF_FILE, EVIDENCE_FILE)
ROOT_KEY = "."
MAX_KEY_CHARS = 1000

FolderKind = Literal["run", "eval", "other"]


class Found(NamedTuple):
    """What a scan found below the root, in a stable order: breadth first, and in each
    folder by name from the last, so that the newest come first (``run`` and ``eval``
    name their folders by their UTC start) and are the ones kept when a limit cuts."""

    runs: list[str]
    evals: list[str]
    complete: bool
    """False when a limit (``max_runs``, ``max_depth``, ``max_scan_entries``) cut the scan."""


def key_of(parts: tuple[str, ...]) -> str:
    return "/".join(parts) if parts else ROOT_KEY


def parts_of(key: str, max_depth: int) -> tuple[str, ...]:
    """The folder names a key names, checked lexically before anything is opened.

    Raises:
        UsageError: an empty name, ``.`` or ``..`` inside, an absolute key, a NUL, or deeper
            than ``max_depth``.
    """
    if key == ROOT_KEY:
        return ()
    parts = tuple(key.split("/"))
    if (
        len(key) > MAX_KEY_CHARS
        or len(parts) > max_depth
        or any(part in ("", ".", "..") or "\0" in part for part in parts)
    ):
        raise UsageError(f"not a run or report of this folder: {key[:200]!r}")
    return parts


class Folder:
    """The served folder, open for reading until ``close``."""

    def __init__(self, settings: ViewSettings) -> None:
        """Open the root (a link given on the command line is resolved once, here).

        Raises:
            UsageError: the root is not a folder that can be opened.
        """
        self.settings = settings
        try:
            self.root = settings.root.resolve(strict=True)
            self._fd = os.open(self.root, fsops.DIR_FLAGS)
        except OSError as error:
            raise UsageError(
                f"{settings.root} is not a folder that can be read ({error.strerror}): "
                "give a run folder or a results folder"
            ) from None

    def close(self) -> None:
        os.close(self._fd)

    def _open_dir(self, parts: tuple[str, ...]) -> int:
        try:
            return fsops.open_dir(self._fd, parts)
        except ToolDenied as denied:
            raise UsageError(f"{key_of(parts)}: {denied.message}") from None
        except WorkspaceError as error:
            raise UsageError(f"{key_of(parts)}: {error}") from None

    def kind(self, parts: tuple[str, ...]) -> FolderKind:
        """``run`` (it holds a trace or a result), ``eval`` (a report) or ``other``.

        Raises:
            UsageError: the folder cannot be reached without following a link.
        """
        fd = self._open_dir(parts)
        try:
            return _kind_at(fd)
        finally:
            os.close(fd)

    def read(self, parts: tuple[str, ...], name: str, limit: int | None = None) -> bytes | None:
        """The bytes of regular file ``name`` in folder ``parts``; None when it is missing.

        Raises:
            UsageError: the file is a link, a device or FIFO, or larger than the limit
                (``max_file_bytes`` unless ``limit`` is given).
        """
        most = self.settings.max_file_bytes if limit is None else limit
        shown = "/".join((*parts, name))
        fd = self._open_dir(parts)
        try:
            if fsops.lstat_at(fd, name) is None:
                return None
            try:
                file_fd, info = fsops.open_regular(fd, name, shown, allow_hardlink=True)
            except ToolDenied as denied:
                raise UsageError(denied.message) from None
        finally:
            os.close(fd)
        try:
            if limit is None and info.st_size > most:
                raise UsageError(
                    f"{shown} has {info.st_size} bytes, over the viewer's limit of {most} "
                    "(--max-file-bytes)"
                )
            data = fsops.read_fd(file_fd, most)
        finally:
            os.close(file_fd)
        if limit is None and len(data) > most:
            raise UsageError(f"{shown} grew past the viewer's limit of {most} (--max-file-bytes)")
        return data[:most]

    def scan(self) -> Found:
        """Run folders and results folders below the root, breadth first, newest names
        first, within the limits."""
        settings = self.settings
        runs: list[str] = []
        evals: list[str] = []
        queue: deque[tuple[str, ...]] = deque([()])
        seen = 0
        while queue:
            parts = queue.popleft()
            try:
                fd = self._open_dir(parts)
            except UsageError:
                continue
            try:
                kind = _kind_at(fd)
                if kind == "run":
                    runs.append(key_of(parts))
                    if len(runs) >= settings.max_runs:
                        return Found(runs, evals, complete=False)
                    continue  # a run folder holds no other runs
                if kind == "eval":
                    evals.append(key_of(parts))
                if len(parts) >= settings.max_depth:
                    continue
                names = sorted(_subfolders(fd), reverse=True)
            finally:
                os.close(fd)
            seen += len(names)
            if seen > settings.max_scan_entries:
                return Found(runs, evals, complete=False)
            queue.extend((*parts, name) for name in names)
        return Found(runs, evals, complete=True)


def _kind_at(fd: int) -> FolderKind:
    if _is_regular(fd, REPORT_FILE):
        return "eval"
    if _is_regular(fd, TRACE_FILE) or _is_regular(fd, RESULT_FILE):
        return "run"
    return "other"


def _is_regular(fd: int, name: str) -> bool:
    info = fsops.lstat_at(fd, name)
    return info is not None and stat.S_ISREG(info.st_mode)


def _subfolders(fd: int) -> list[str]:
    """Names of the real folders (not links) in ``fd`` whose names are plain UTF-8."""
    names = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                entry.name.encode("utf-8")
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    names.append(entry.name)
            except (UnicodeEncodeError, OSError):
                continue
    return names
