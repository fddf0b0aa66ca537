"""Repositories a run request names by path (``serve --repo-root DIR``, repeatable).

A request may give ``repo: PATH`` instead of a fixture name. The path is attacker-chosen
within the token holder's rights, so nothing outside the operator's roots may ever be
read for it, now or when the run starts:

- **The roots** are checked once, when the server starts (``check_root``): absolute, a
  folder, their own real path (no symbolic link anywhere in them), not ``/``, and
  holding none of the service's own state (token, database, traces, the state folder).
- **The request** (``check_repo``) is refused with one line unless its path is absolute,
  plain (no ``.``/``..``/NUL), and lexically strictly under a root; nothing outside the
  roots is even looked at. Then the folder is opened from ``/`` one component at a time,
  each with ``O_NOFOLLOW | O_DIRECTORY``: a symbolic link anywhere (in the root or under
  it), a missing folder or a file is refused. Such a path is its own real path.
- **At copy time** (``snapshot``, when the run starts) the same walk is made again and
  the copy is made from the descriptor it ends with, never from a path: a folder or a
  root swapped for a link after the check is refused, not followed. The walk below
  it (``workspace.fsops.walk``) enters folders with ``O_NOFOLLOW`` and only when the
  folder opened is the one listed, and opens files with ``O_NOFOLLOW`` after checking
  that they are regular, singly linked files: it is ``workspace.copy``'s own copy
  (``copy_from``; links, hard-linked files, devices, FIFOs, sockets, ``.git`` and
  bytecode are left out).

The copy goes into a private folder of the service (``work_dir/repos/<run id>/<name>``)
and the run is given that copy as a fixture, so the controller, and ``serve --ray``'s
nodes, only ever read the service's own copy. It is removed when the run ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.errors import UsageError
from sandbox_agent.workspace import fsops
from sandbox_agent.workspace.copy import (
    OverLimits,
    SkippedEntry,
    WorkspaceLimits,
    copy_from,
    make_dir,
)

REPO_ROOT_FLAG = "serve --repo-root DIR"
MAX_REPO_PATH_CHARS = 4096
SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
"""The name the copy is given (the controller's fixture-name rule); ``repo`` otherwise."""
FALLBACK_NAME = "repo"
RUN_FOLDER = re.compile(r"^[0-9a-f]{32}$")


class RepoRefused(UsageError):
    """A ``repo`` path this server will not read; the message is one line and names
    the flag that would allow a folder there (``serve --repo-root DIR``)."""


class RepoLocation(NamedTuple):
    """A requested path, split into the root it is under and the components below it."""

    requested: str
    root: Path
    parts: tuple[str, ...]
    """At least one: a root itself is never a repository."""

    @property
    def name(self) -> str:
        """The name of the service's copy: the folder's own name when it is a plain one."""
        last = self.parts[-1]
        return last if SNAPSHOT_NAME.match(last) and last != FALLBACK_NAME else FALLBACK_NAME


ComponentHook = fsops.ComponentHook


def check_root(root: Path, own_dirs: Iterable[Path], own_files: Iterable[Path] = ()) -> None:
    """Check one ``--repo-root`` when the server starts.

    Args:
        root: the folder as the operator gave it.
        own_dirs: folders wholly the service's (its work folder, the state folder): a
            root may neither hold nor be inside any of them.
        own_files: the service's files kept elsewhere (database, token): a root may not
            hold them.

    Raises:
        ValueError: one line saying what is wrong and what to give instead.
    """
    text = os.fspath(root)
    if not root.is_absolute():
        raise ValueError(f"{text} is not an absolute path: give the folder's absolute path")
    real = Path(os.path.realpath(root))
    if not real.is_dir():
        raise ValueError(f"{text} is not a folder: give an existing folder of repositories")
    if Path(os.path.normpath(root)) != real or text != os.path.normpath(text):
        raise ValueError(
            f"{text} is not its own real path (it leads through a symbolic link or holds "
            f"'.' or '..'): give {real}"
        )
    if real == Path("/"):
        raise ValueError("/ would let a request name any folder: give a folder of repositories")
    for place in own_dirs:
        mine = Path(os.path.realpath(place))
        if mine == real or mine.is_relative_to(real) or real.is_relative_to(mine):
            raise ValueError(_overlap(text, mine))
    for place in own_files:
        mine = Path(os.path.realpath(place))
        if mine.is_relative_to(real):
            raise ValueError(_overlap(text, mine))


def _overlap(root: str, mine: Path) -> str:
    return (
        f"{root} overlaps the service's own state ({mine}): give a folder of repositories "
        "that holds none of it"
    )


def locate(requested: str, roots: Sequence[Path]) -> RepoLocation:
    """The root ``requested`` is under, by its text alone: nothing is read.

    Raises:
        RepoRefused: no roots, a path that is not absolute or not plain, or one that is
            not strictly under a root.
    """
    shown = _shown(requested)
    if not roots:
        raise RepoRefused(
            f"repo {shown}: this server takes no repository paths; start it with "
            f"{REPO_ROOT_FLAG} to allow the folders under DIR, or name a fixture"
        )
    allowed = ", ".join(str(root) for root in roots)
    hint = f"name a folder under {allowed} ({REPO_ROOT_FLAG} allows the folders under DIR)"
    if "\0" in requested or not _encodable(requested):
        raise RepoRefused(f"repo {shown} is not a valid path: {hint}")
    if not requested.startswith("/"):
        raise RepoRefused(f"repo {shown} is not an absolute path: {hint}")
    parts = tuple(part for part in requested.split("/") if part)
    if any(part in (".", "..") for part in parts):
        raise RepoRefused(f"repo {shown} holds '.' or '..': give the plain path; {hint}")
    for root in roots:
        base = root.parts[1:]
        if parts[: len(base)] == base:
            if len(parts) == len(base):
                raise RepoRefused(f"repo {shown} is a repository root itself: {hint}")
            return RepoLocation(requested, root, parts[len(base) :])
    raise RepoRefused(f"repo {shown} is not under a repository root of this server: {hint}")


def open_repo(location: RepoLocation, *, hook: ComponentHook | None = None) -> int:
    """Open the folder from ``/``, one ``O_NOFOLLOW | O_DIRECTORY`` component at a time
    (``workspace.fsops.open_dir``).

    Returns a descriptor of the folder, which the caller must close.

    Raises:
        RepoRefused: a component is a link, missing, or not a folder (the root's own
            components included: a root swapped for a link is refused, not followed).
    """
    root_parts = location.root.parts[1:]

    def refusal(index: int, dir_fd: int, name: str, error: OSError) -> RepoRefused:
        return _refusal(location, dir_fd, name, index < len(root_parts), error)

    top = os.open("/", fsops.DIR_FLAGS)
    try:
        components = (*root_parts, *location.parts)
        return fsops.open_dir(top, components, hook=hook, refusal=refusal)
    finally:
        os.close(top)


def check_repo(requested: str, roots: Sequence[Path]) -> RepoLocation:
    """``locate`` and ``open_repo`` (then close): what a request is answered with.

    Raises:
        RepoRefused: see ``locate`` and ``open_repo``.
    """
    location = locate(requested, roots)
    os.close(open_repo(location))
    return location


def snapshot(
    location: RepoLocation,
    destination: Path,
    *,
    limits: WorkspaceLimits | None = None,
    hook: ComponentHook | None = None,
) -> list[SkippedEntry]:
    """Copy the folder at ``location`` into the new folder ``destination``, from a
    descriptor opened by ``open_repo`` now: the check is made again at copy time.

    Returns:
        What was left out, sorted by path (``workspace.copy``'s rule).

    Raises:
        RepoRefused: the folder is no longer one this server may read.
        UsageError: the folder is over the copy's limits.
        WorkspaceError: a file changed during the copy, or could not be read.
    """
    limits = limits or WorkspaceLimits()
    fd = open_repo(location, hook=hook)
    try:
        make_dir(destination, 0o700)
        return copy_from(fd, (destination,), limits)
    except OverLimits as over:  # the client can change no limit: one line, no advice
        raise UsageError(_too_large(over.at, limits) if over.size else over.fact) from None
    finally:
        os.close(fd)


def remove_snapshot(folder: Path) -> None:
    """Remove a run's copy (never following a link in it)."""
    with contextlib.suppress(OSError):
        shutil.rmtree(folder)


def remove_stale_snapshots(snapshots_dir: Path, finished: Callable[[str], bool]) -> None:
    """Remove the copies a killed server left: those of runs ``finished`` says have ended.

    A folder of a run this server's database never had stays (``finished`` says False):
    another server, with its own database, may share the work folder.
    """
    try:
        names = [entry.name for entry in snapshots_dir.iterdir()]
    except OSError:
        return
    for name in names:
        if RUN_FOLDER.match(name) and finished(name):
            remove_snapshot(snapshots_dir / name)


def _too_large(relpath: str, limits: WorkspaceLimits) -> str:
    return (
        f"the repository is over the copy's limits at '{relpath}' (a file at most "
        f"{limits.max_file_bytes} bytes, {limits.max_total_bytes} in all)"
    )


def _refusal(
    location: RepoLocation, dir_fd: int, name: str, in_root: bool, error: OSError
) -> RepoRefused:
    shown = _shown(location.requested)
    if in_root:
        return RepoRefused(
            f"repo {shown}: the repository root {location.root} is no longer a real folder "
            f"({error.strerror}); it is never followed through a link: the operator must "
            f"restart serve with {REPO_ROOT_FLAG} naming a real folder"
        )
    hint = f"give the real path of a folder under {REPO_ROOT_FLAG}"
    if error.errno == errno.ENOENT:
        return RepoRefused(f"repo {shown}: '{name}' does not exist; {hint}")
    if error.errno not in (errno.ELOOP, errno.ENOTDIR):
        return RepoRefused(f"repo {shown}: '{name}' cannot be opened ({error.strerror}); {hint}")
    info = fsops.lstat_at(dir_fd, name)
    if info is None:
        return RepoRefused(f"repo {shown}: '{name}' does not exist; {hint}")
    if stat.S_ISLNK(info.st_mode):
        return RepoRefused(
            f"repo {shown}: '{name}' is a symbolic link, which is never followed; {hint}"
        )
    return RepoRefused(f"repo {shown}: '{name}' is not a folder; {hint}")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(requested: str, limit: int = 200) -> str:
    """The path as a quoted, one-line, bounded text (it came from a client)."""
    return ascii(requested[:limit]) + ("..." if len(requested) > limit else "")
