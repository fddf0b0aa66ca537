"""What ``/proc/<pid>/stat`` says about a process: its state and its start time.

One reader for the controller's reapers (sandboxes, workspaces), the cluster's nodes and
the model server: the command name (field 2) may hold spaces and parentheses, so the
fields are split after its last ``)``.
"""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """The fields after the command name (the state first), or None with no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def process_start_time(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (field 22), or None if there is
    no such process: with the pid, it tells a process from a later one that reuses it."""
    fields = stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def is_gone_or_zombie(pid: int) -> bool:
    """Whether ``pid`` no longer runs: no such process, or one that ended and waits to be
    reaped (state ``Z``)."""
    fields = stat_fields(pid)
    return not fields or fields[0] == "Z"
