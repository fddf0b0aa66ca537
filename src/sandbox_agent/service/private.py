"""The service's state is its owner's alone: folders 0700, files 0600, whatever the umask.

The run database, the inline plans and the traces hold tasks, diffs and model output; with
the process umask (often 022) they were readable by every local user whenever the token
file, whose folder is made 0700, lived elsewhere (SR-8 S8-6).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path, *, tighten: bool) -> None:
    """Make ``path`` and any missing parents as folders only their owner can enter.

    Args:
        path: the folder.
        tighten: also take group and other access away from ``path`` itself if it exists
            and is ours (the service's own folders; never a folder the operator named
            only as the place of a file).
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=DIR_MODE)
            folder.chmod(DIR_MODE)  # mkdir's mode is narrowed by the umask, never widened
    if tighten and not missing:
        _tighten(path, DIR_MODE)


def private_file(path: Path) -> None:
    """Make ``path`` an empty file only its owner can read, or tighten it if it is ours."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     FILE_MODE)  # fmt: skip
    except FileExistsError:
        _tighten(path, FILE_MODE)
        return
    os.close(fd)


def tighten_if_present(path: Path) -> None:
    """``private_file`` for a file another program makes (SQLite's ``-wal`` and ``-shm``)."""
    with contextlib.suppress(FileNotFoundError):
        _tighten(path, FILE_MODE)


def _tighten(path: Path, mode: int) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return  # not ours to change; a link is never followed
    if stat.S_IMODE(info.st_mode) & ~mode:
        path.chmod(stat.S_IMODE(info.st_mode) & mode)
