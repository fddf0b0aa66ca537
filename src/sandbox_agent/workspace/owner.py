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
import time
from pathlib import Path

WORKSPACE_PREFIX = "sandbox-agent-ws-"
OWNER_FILE = "owner.json"
UNLABELLED_GRACE_S = 300.0
"""A folder without a label is young (being created) for this long, then reaped."""


def process_start_time(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


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
    """Write the current process's label into ``folder``."""
    path = folder / OWNER_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(owner_record(), handle, sort_keys=True)


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


def _abandoned(folder: Path) -> bool:
    try:
        record = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        try:
            age = time.time() - folder.lstat().st_mtime
        except OSError:
            return False
        return age > UNLABELLED_GRACE_S
    except (OSError, ValueError):
        return True
    return not isinstance(record, dict) or not owner_alive(record)
