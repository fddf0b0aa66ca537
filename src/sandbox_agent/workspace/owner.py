"""Owner labels on workspaces, and the reaper that removes those of dead controllers.

A workspace folder is ``<tmp>/sandbox-agent-ws-XXXX/`` holding ``repo/`` (the copy),
``base/`` (the pristine copy) and ``owner.json`` (host, pid, process start time). The
label sits outside the copied tree, so nothing in the sandbox can see or forge it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

from sandbox_agent.canonical import canonical_json
from sandbox_agent.procstat import process_start_time

WORKSPACE_PREFIX = "sandbox-agent-ws-"
OWNER_FILE = "owner.json"
UNLABELLED_GRACE_S = 300.0
"""A folder without a label is young (being created) for this long, then reaped."""


def owner_record() -> dict[str, object]:
    """The label of the current process."""
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "pid": pid,
        "start_time": process_start_time(pid),
        "created": time.time(),
    }


def write_owner(folder: Path) -> None:
    """Write the current process's label into ``folder``, atomically: a reaper running
    at another run's start must never read a half-written label (and take it for garbage)."""
    path = folder / OWNER_FILE
    partial = folder / f".{OWNER_FILE}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(partial, flags, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(canonical_json(owner_record()))
    os.replace(partial, path)


def owner_alive(record: dict[str, object]) -> bool:
    """True unless the labelled process is certainly gone (same host, pid dead or reused)."""
    if record.get("host") != socket.gethostname():
        return True
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = record.get("start_time")
    return started is None or process_start_time(pid) in (None, started)


def reap_workspaces(base_dir: Path | None = None) -> list[str]:
    """Remove every workspace whose owner process is dead; return the folders removed.

    Args:
        base_dir: where workspaces are made; the system temporary folder by default.
    """
    parent = base_dir or Path(tempfile.gettempdir())
    removed: list[str] = []
    for folder in sorted(parent.glob(f"{WORKSPACE_PREFIX}*")):
        if folder.is_symlink() or not folder.is_dir():
            continue
        if not _abandoned(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(str(folder))
    return removed


def reap_workspaces_in_background(base_dir: Path | None = None) -> threading.Thread:
    """``reap_workspaces`` in a daemon thread: a run starts without waiting for the removal
    of what a killed run left (up to two 100 MiB copies), and never fails because of it.

    Called at the start of every run, so a workspace left by a controller killed with
    SIGKILL is gone after the next start, not only after ``sandbox-agent reap`` (SR-8 C8-4).
    """
    folder = base_dir or Path(tempfile.gettempdir())  # resolved now, in the caller's settings

    def reap() -> None:
        try:
            reap_workspaces(folder)
        except OSError:  # housekeeping never breaks a run; 'reap' reports failures
            return

    thread = threading.Thread(target=reap, name="workspace-reaper", daemon=True)
    thread.start()
    return thread


def _abandoned(folder: Path) -> bool:
    try:
        record = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # No label, or one that does not parse: reaped only once older than the grace
        # (a folder being made by a live run has no label yet).
        try:
            age = time.time() - folder.lstat().st_mtime
        except OSError:
            return False
        return age > UNLABELLED_GRACE_S
    return not isinstance(record, dict) or not owner_alive(record)
