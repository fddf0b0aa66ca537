"""The container's own cgroup limits and OOM-kill counter, v1 or v2.

Docker mounts the container's cgroup at ``/sys/fs/cgroup`` (v1: one folder per
controller; v2: one unified folder). gVisor shows no cgroup files: every reader
here then returns None and the caller says so.
"""

from __future__ import annotations

# os.path and string paths, not pathlib: PID 1 imports this on every sandbox run and
# pathlib's import alone costs more than every cgroup read here (issue 3).
import os

UNLIMITED = -1

TYPE_CHECKING = False
if TYPE_CHECKING:
    Root = str | os.PathLike[str]


def _read(root: Root, *parts: str) -> str | None:
    try:
        with open(os.path.join(root, *parts), encoding="ascii") as file:
            return file.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _number(text: str | None) -> int | None:
    if text is None:
        return None
    if text == "max":
        return UNLIMITED
    try:
        return int(text)
    except ValueError:
        return None


def _is_v2(cgroup_root: Root) -> bool:
    return os.path.exists(os.path.join(cgroup_root, "cgroup.controllers"))


def memory_limits(cgroup_root: Root) -> tuple[int | None, int | None]:
    """``(memory, memory+swap)`` in bytes; either None when not visible, -1 for unlimited.

    v1 has ``memory.memsw.limit_in_bytes`` only with swap accounting; without it there
    is no swap to bound and memory+swap is reported equal to memory. v2 reports
    ``memory.swap.max`` separately, turned here into memory+swap.
    """
    if _is_v2(cgroup_root):
        memory = _number(_read(cgroup_root, "memory.max"))
        swap = _number(_read(cgroup_root, "memory.swap.max"))
        if memory is None or swap is None:
            return memory, None
        if UNLIMITED in (memory, swap):
            return memory, UNLIMITED
        return memory, memory + swap
    memory = _number(_read(cgroup_root, "memory", "memory.limit_in_bytes"))
    if not os.path.exists(os.path.join(cgroup_root, "memory", "memory.memsw.limit_in_bytes")):
        return memory, memory
    return memory, _number(_read(cgroup_root, "memory", "memory.memsw.limit_in_bytes"))


def pids_limit(cgroup_root: Root) -> int | None:
    """``pids.max`` (-1 for ``max``), or None when not visible."""
    if _is_v2(cgroup_root):
        return _number(_read(cgroup_root, "pids.max"))
    return _number(_read(cgroup_root, "pids", "pids.max"))


def oom_kills(cgroup_root: Root) -> int | None:
    """The cgroup's ``oom_kill`` counter, or None when not visible."""
    if _is_v2(cgroup_root):
        text = _read(cgroup_root, "memory.events")
    else:
        text = _read(cgroup_root, "memory", "memory.oom_control")
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return _number(value.strip())
    return None
