"""Low-level, descriptor-relative file operations that never follow a link.

Everything here works from an open directory descriptor: ``openat`` with
``O_NOFOLLOW`` at each component, ``fstatat`` without following, and a check that
the object opened is the object examined (same device and inode), so a link or a
FIFO swapped in between is refused rather than followed or opened in a way that
can hang (``O_NONBLOCK``; a FIFO is never read).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied, WorkspaceError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_WALK_DEPTH = 64
READ_CHUNK = 1024 * 1024

EntryKind = Literal["file", "dir", "symlink", "hardlink", "special", "bad_name", "too_deep"]

ComponentHook = Callable[[int, str], None]
"""Called with (parent dir fd, name) just before each component is opened; tests use it
to swap a folder for a link between the lexical check and the open."""
ComponentRefusal = Callable[[int, int, str, OSError], BaseException]
"""Makes the error raised for a component that could not be opened, from (its index, the
parent dir fd, its name, the error); the parent is still open when it is called."""


class Entry(NamedTuple):
    """One object found by ``walk``: its ``/``-joined relative path, kind and ``lstat``.

    ``dir_fd`` (the parent folder) and ``name`` are valid only until the walk moves on.
    """

    relpath: str
    kind: EntryKind
    stat: os.stat_result
    dir_fd: int
    name: str


def classify(st: os.stat_result) -> EntryKind:
    """The kind of an object from its ``lstat``: hard-linked files count as ``hardlink``."""
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return "hardlink" if st.st_nlink > 1 else "file"
    return "special"


def _denial_for(kind: EntryKind, shown: str) -> ToolDenied:
    if kind == "symlink":
        return ToolDenied(
            denials.PATH_SYMLINK, f"'{shown}' is a symbolic link; links are never followed"
        )
    if kind == "hardlink":
        return ToolDenied(denials.PATH_HARDLINK, f"'{shown}' has several hard links; it is refused")
    if kind == "special":
        return ToolDenied(denials.PATH_SPECIAL_FILE, f"'{shown}' is a device, FIFO or socket")
    if kind == "dir":
        return ToolDenied(denials.PATH_NOT_FOUND, f"'{shown}' is a folder; use list_files")
    return ToolDenied(denials.PATH_NOT_FOUND, f"'{shown}' is not a folder")


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``fstatat`` without following; None when the name does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_dir(
    root_fd: int,
    parts: tuple[str, ...],
    *,
    hook: ComponentHook | None = None,
    refusal: ComponentRefusal | None = None,
) -> int:
    """Open the folder ``parts`` under ``root_fd``, one ``O_NOFOLLOW`` component at a time.

    Returns a new descriptor the caller must close.

    Raises:
        ToolDenied: ``path.symlink``, ``path.special_file``, ``path.hardlink`` or
            ``path.not_found`` for the first component that is not a real folder (what
            ``refusal`` makes instead, when given).
    """
    fd = os.dup(root_fd)
    try:
        for index, name in enumerate(parts):
            if hook is not None:
                hook(fd, name)
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if refusal is not None:
                    raise refusal(index, fd, name, error) from None
                shown = "/".join(parts[: index + 1])
                raise _component_error(fd, name, shown, error) from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _component_error(dir_fd: int, name: str, shown: str, error: OSError) -> ToolDenied:
    if error.errno == errno.ENOENT:
        return ToolDenied(denials.PATH_NOT_FOUND, f"'{shown}' does not exist")
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        st = lstat_at(dir_fd, name)
        if st is None:
            return ToolDenied(denials.PATH_NOT_FOUND, f"'{shown}' does not exist")
        return _denial_for(classify(st), shown)
    raise WorkspaceError(f"cannot open '{shown}' in the workspace: {error.strerror}")


def open_regular(
    dir_fd: int, name: str, shown: str, *, allow_hardlink: bool = False
) -> tuple[int, os.stat_result]:
    """Open a regular, singly linked file in ``dir_fd`` for reading, never following a link.

    ``allow_hardlink`` admits a multiply linked file (hashing the user's original only).

    The ``lstat`` comes first, so a device or FIFO is never opened; the ``fstat`` after
    the open must show the same inode, so nothing swapped in between is read.

    Raises:
        ToolDenied: ``path.not_found``, ``path.symlink``, ``path.hardlink``,
            ``path.special_file`` (or ``path.not_found`` for a folder).
    """
    before = lstat_at(dir_fd, name)
    if before is None:
        raise ToolDenied(denials.PATH_NOT_FOUND, f"'{shown}' does not exist")
    kind = classify(before)
    if kind == "hardlink" and allow_hardlink:
        kind = "file"
    if kind != "file":
        raise _denial_for(kind, shown)
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        raise _component_error(dir_fd, name, shown, error) from None
    after = os.fstat(fd)
    after_kind = classify(after)
    if after_kind == "hardlink" and allow_hardlink:
        after_kind = "file"
    if after_kind != "file" or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise _denial_for(after_kind if after_kind != "file" else "special", shown)
    return fd, after


def read_fd(fd: int, limit: int) -> bytes:
    """Read at most ``limit + 1`` bytes, so a caller can tell "exactly at the limit" from "over"."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(READ_CHUNK, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, content: bytes, mode: int) -> None:
    """Write all of ``content`` to the new file ``fd``, set its mode exactly (the umask
    narrowed the one it was created with), and close it."""
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def walk(
    dir_fd: int,
    prefix: str = "",
    *,
    skip: Callable[[str], bool] | None = None,
    depth: int = 0,
    bad_names: bool = True,
) -> Iterator[Entry]:
    """Every object under ``dir_fd``, sorted by name, folders before their contents.

    Links are reported, never followed; folders are entered with ``O_NOFOLLOW`` and
    only when the opened folder is the one listed. Names that are not valid UTF-8
    come back as ``bad_name`` (a tool could not address them), unless ``bad_names`` is
    False (the digest: it must cover them by kind, content and subtree; their
    ``relpath`` then holds surrogate escapes, ``os.fsencode`` gives the bytes back);
    ``skip(relpath)`` drops an object and everything under it (``.git``).
    """
    with os.scandir(dir_fd) as iterator:
        names = sorted(entry.name for entry in iterator)
    for name in names:
        relpath = f"{prefix}{name}"
        if skip is not None and skip(relpath):
            continue
        st = lstat_at(dir_fd, name)
        if st is None:
            continue
        if bad_names and not _is_utf8(name):
            yield Entry(relpath, "bad_name", st, dir_fd, name)
            continue
        kind = classify(st)
        if kind != "dir":
            yield Entry(relpath, kind, st, dir_fd, name)
            continue
        if depth >= MAX_WALK_DEPTH:
            yield Entry(relpath, "too_deep", st, dir_fd, name)
            continue
        yield Entry(relpath, "dir", st, dir_fd, name)
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            continue
        try:
            opened = os.fstat(child)
            if (opened.st_dev, opened.st_ino) == (st.st_dev, st.st_ino):
                yield from walk(
                    child, f"{relpath}/", skip=skip, depth=depth + 1, bad_names=bad_names
                )
        finally:
            os.close(child)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
