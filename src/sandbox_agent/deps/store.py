"""Where environments and resolutions live under the state folder, and how they are
written: whole, or not at all.

```
<state>/deps/resolutions/<key>.json    a recorded resolution (key: resolve.resolution_key)
<state>/deps/envs/<hash>/              an environment, read-only (hash: Resolution.sha256)
<state>/deps/envs/.partial-<pid>-*/    one being made; renamed into place when whole
```
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sandbox_agent.deps.resolve import Resolution
from sandbox_agent.settings import state_home

PARTIAL_PREFIX = ".partial-"
DEPS_HOME_ENV = "SANDBOX_AGENT_DEPS_HOME"
"""Overrides where environments live (default ``<state>/deps``): several state folders
can share one store, since everything in it is named by its content's hash."""


def deps_home() -> Path:
    override = os.environ.get(DEPS_HOME_ENV)
    return Path(override) if override else state_home() / "deps"


def envs_dir() -> Path:
    return deps_home() / "envs"


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A new, private (0700) folder under the store for uv's input files, removed after.
    Never one under a shared temporary folder, whose parents another user can write to
    (SR-12 D2)."""
    base = deps_home() / "scratch"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="resolve-") as folder:
        yield Path(folder)


def resolution_path(key: str) -> Path:
    return deps_home() / "resolutions" / f"{key}.json"


def load_resolution(key: str) -> Resolution | None:
    """The recorded resolution, or None (none yet, or unreadable: then it is redone)."""
    try:
        return Resolution.model_validate_json(resolution_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_resolution(key: str, resolution: Resolution) -> Resolution:
    path = resolution_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(resolution.model_dump_json(indent=1), encoding="utf-8")
    partial.replace(path)
    return resolution


def make_writable(root: Path) -> None:
    """Undo ``make_read_only`` so the tree can be removed."""
    for folder, dirs, _files in os.walk(root):
        os.chmod(folder, 0o700)
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(Path(folder) / name, 0o700)


def remove_tree(root: Path) -> None:
    """Remove an environment or a partial one, read-only or not."""
    if not root.exists():
        return
    make_writable(root)
    shutil.rmtree(root, ignore_errors=True)


def make_read_only(root: Path) -> None:
    """Files ``0444`` (``0555`` when executable), folders ``0555``: readable by the
    sandbox's uids, writable by nobody without a chmod first."""
    for folder, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, 0o555 if mode & 0o111 else 0o444)
        os.chmod(folder, 0o555)  # noqa: S103 - read and enter, for the sandbox's uids


def remove_stale_partials() -> None:
    """Partial environments whose maker is gone (a crash, a kill) are removed."""
    folder = envs_dir()
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        if not entry.name.startswith(PARTIAL_PREFIX):
            continue
        pid = entry.name.removeprefix(PARTIAL_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            remove_tree(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
