"""Safe file operations on the workspace copy: every one descriptor-relative from its root.

Lexical checks first (``paths.split_path``), then an ``O_NOFOLLOW`` walk from the root
descriptor; links, hard links and special files are refused wherever they appear,
also when something created them after the copy. Writes create new files with
``O_CREAT|O_EXCL|O_NOFOLLOW`` and replace existing ones with a temporary file renamed
over them in the same folder descriptor; ``commit`` applies a set of writes all or none.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.workspace import fsops
from sandbox_agent.workspace.paths import split_path

TEMP_PREFIX = ".sandbox-agent-tmp-"
NEW_FILE_MODE = 0o644
NEW_DIR_MODE = 0o755
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ListedFiles(NamedTuple):
    files: list[str]
    truncated: bool


class TextFile(NamedTuple):
    path: str
    content: bytes


class PlannedWrite(NamedTuple):
    """One file to write. ``old`` is its current content (None: create it; it must not exist)."""

    path: str
    parts: tuple[str, ...]
    old: bytes | None
    new: bytes


class SafeFS:
    """Descriptor-relative reads and writes under one root folder."""

    def __init__(self, root: Path, *, hook: fsops.ComponentHook | None = None) -> None:
        """Args:
        root: the workspace copy (ours, in a private folder).
        hook: called before each component is opened (tests inject races with it).
        """
        self.root = root
        self._hook = hook

    def _root_fd(self) -> int:
        return os.open(self.root, fsops.DIR_FLAGS)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The content of the regular file ``path``.

        Raises:
            ToolDenied: any ``path.*`` code; ``path.too_large`` over ``max_bytes``.
        """
        parts = split_path(path)
        parent = self._open_dir(parts[:-1])
        try:
            if self._hook is not None:
                self._hook(parent, parts[-1])
            fd, st = fsops.open_regular(parent, parts[-1], "/".join(parts))
        finally:
            os.close(parent)
        try:
            if st.st_size > max_bytes:
                raise _too_large(path, max_bytes)
            content = fsops.read_fd(fd, max_bytes)
        finally:
            os.close(fd)
        if len(content) > max_bytes:
            raise _too_large(path, max_bytes)
        return content

    def file_exists(self, path: str) -> bool:
        """True when anything (file, link, ...) exists at ``path``; a missing folder is False.

        Raises:
            ToolDenied: a lexical ``path.*`` code, or a link/special file on the way.
        """
        parts = split_path(path)
        try:
            return self._lstat(parts) is not None
        except ToolDenied as denied:
            if denied.code == denials.PATH_NOT_FOUND:
                return False
            raise

    def list_files(self, path: str, max_count: int) -> ListedFiles:
        """Regular files under folder ``path`` (``""``: the root), sorted, at most ``max_count``;
        ``path`` itself when it names a regular file (as ``ls FILE`` does: a model that lists
        a file it was shown is answered, not refused).

        Links, hard links and special files are left out.

        Raises:
            ToolDenied: any ``path.*`` code for ``path`` itself.
        """
        parts = split_path(path, allow_root=True)
        st = self._lstat(parts) if parts else None
        if st is not None and fsops.classify(st) == "file":
            return ListedFiles(["/".join(parts)], truncated=False)
        files: list[str] = []
        with self._walk(parts) as entries:
            for entry in entries:
                if entry.kind != "file":
                    continue
                if len(files) == max_count:
                    return ListedFiles(files, truncated=True)
                files.append(entry.relpath)
        return ListedFiles(files, truncated=False)

    def iter_files(self, path: str, max_bytes: int) -> Iterator[TextFile]:
        """The content of each regular file at or under ``path``, skipping files over ``max_bytes``.

        Raises:
            ToolDenied: any ``path.*`` code for ``path`` itself.
        """
        parts = split_path(path, allow_root=True)
        st = self._lstat(parts) if parts else None
        if st is not None and fsops.classify(st) != "dir":
            yield TextFile("/".join(parts), self.read_bytes(path, max_bytes))
            return
        with self._walk(parts) as entries:
            for entry in entries:
                if entry.kind != "file" or entry.stat.st_size > max_bytes:
                    continue
                try:
                    fd, _ = fsops.open_regular(entry.dir_fd, entry.name, entry.relpath)
                except ToolDenied:
                    continue
                try:
                    content = fsops.read_fd(fd, max_bytes)
                finally:
                    os.close(fd)
                if len(content) <= max_bytes:
                    yield TextFile(entry.relpath, content)

    def _open_dir(self, parts: tuple[str, ...]) -> int:
        root = self._root_fd()
        try:
            return fsops.open_dir(root, parts, hook=self._hook)
        finally:
            os.close(root)

    def _lstat(self, parts: tuple[str, ...]) -> os.stat_result | None:
        """The ``lstat`` of ``parts`` (not followed), its folders opened from the root one
        ``O_NOFOLLOW`` component at a time; None when it does not exist."""
        parent = self._open_dir(parts[:-1])
        try:
            return fsops.lstat_at(parent, parts[-1])
        finally:
            os.close(parent)

    @contextmanager
    def _walk(self, parts: tuple[str, ...]) -> Iterator[Iterator[fsops.Entry]]:
        """``fsops.walk`` of the folder ``parts``, opened as ``_open_dir`` does, closed after."""
        folder = self._open_dir(parts)
        try:
            yield fsops.walk(folder, "".join(f"{part}/" for part in parts))
        finally:
            os.close(folder)

    def commit(self, writes: list[PlannedWrite]) -> None:
        """Apply every write or none: on any failure, what was done is undone.

        Every replaced file must still hold exactly ``old``; every created file must
        not exist. Missing parent folders of new files are created (and removed again
        on failure).

        Raises:
            ToolDenied: a ``path.*`` or ``patch.exists`` code (nothing changed).
        """
        _Transaction(self).run(writes)


class _Transaction:
    def __init__(self, fs: SafeFS) -> None:
        self.fs = fs
        self.fds: list[int] = []
        self.created_dirs: list[tuple[int, str]] = []
        self.created_files: list[tuple[int, str]] = []
        self.temps: list[tuple[int, str]] = []
        self.replaced: list[tuple[int, str, bytes, int]] = []

    def run(self, writes: list[PlannedWrite]) -> None:
        try:
            staged: list[tuple[int, str, str, bytes, int]] = []
            for write in writes:
                parent = self._open_parent(write.parts[:-1], create=write.old is None)
                name = write.parts[-1]
                if write.old is None:
                    self._create(parent, name, write)
                else:
                    mode = self._check_current(parent, name, write)
                    temp = self._write_temp(parent, write.new, mode)
                    staged.append((parent, temp, name, write.old, mode))
            for parent, temp, name, old, mode in staged:
                os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
                self.temps.remove((parent, temp))
                self.replaced.append((parent, name, old, mode))
        except BaseException:
            self._roll_back()
            raise
        finally:
            for fd in self.fds:
                os.close(fd)

    def _open_parent(self, parts: tuple[str, ...], *, create: bool) -> int:
        fd = self.fs._root_fd()
        self.fds.append(fd)
        for name in parts:
            made = False
            if create and fsops.lstat_at(fd, name) is None:
                os.mkdir(name, NEW_DIR_MODE, dir_fd=fd)
                self.created_dirs.append((fd, name))
                made = True
            fd = fsops.open_dir(fd, (name,), hook=self.fs._hook)
            self.fds.append(fd)
            if made:
                os.fchmod(fd, NEW_DIR_MODE)  # mkdir's mode is narrowed by the umask
        return fd

    def _create(self, parent: int, name: str, write: PlannedWrite) -> None:
        try:
            fd = os.open(name, WRITE_FLAGS, NEW_FILE_MODE, dir_fd=parent)
        except FileExistsError:
            raise ToolDenied(denials.PATCH_EXISTS, f"'{write.path}' already exists") from None
        self.created_files.append((parent, name))
        fsops.write_all(fd, write.new, NEW_FILE_MODE)

    def _check_current(self, parent: int, name: str, write: PlannedWrite) -> int:
        fd, st = fsops.open_regular(parent, name, write.path)
        try:
            current = fsops.read_fd(fd, len(write.old or b""))
        finally:
            os.close(fd)
        if current != write.old:
            raise ToolDenied(denials.PATCH_NOT_FOUND, f"'{write.path}' changed; read it again")
        return st.st_mode & 0o777

    def _write_temp(self, parent: int, content: bytes, mode: int) -> str:
        temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(temp, WRITE_FLAGS, mode, dir_fd=parent)
        self.temps.append((parent, temp))
        fsops.write_all(fd, content, mode)
        return temp

    def _roll_back(self) -> None:
        temps, self.temps = self.temps, []
        for parent, temp in temps:
            _unlink_quietly(parent, temp)
        for parent, name, old, mode in reversed(self.replaced):
            temp = self._write_temp(parent, old, mode)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        for parent, name in reversed(self.created_files):
            _unlink_quietly(parent, name)
        for parent, name in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=parent)


def _unlink_quietly(parent: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=parent)


def _too_large(path: str, max_bytes: int) -> ToolDenied:
    return ToolDenied(
        denials.PATH_TOO_LARGE, f"'{path}' is larger than {max_bytes} bytes; search it instead"
    )
