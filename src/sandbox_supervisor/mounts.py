"""``/proc/self/mountinfo``, parsed: which mount covers a path, with which options.

Per-mount options (``ro``, ``noexec``, ...) come from field 6; the filesystem's own
options (``size=64m``) from the fields after the ``-`` separator. gVisor writes the
same layout with fewer options (see ``attest``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")
_SIZE = re.compile(r"(\d+)([kmg]?)", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class Mount(NamedTuple):
    """One mountinfo line."""

    mount_point: str
    options: frozenset[str]
    fstype: str
    super_options: dict[str, str]


def _unescape(field: str) -> str:
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Every mount, in mount order (a later mount over the same point hides an earlier one).

    Raises:
        ValueError: a line is not in mountinfo format.
    """
    mounts = []
    for line in text.splitlines():
        if not line.strip():
            continue
        before, separator, after = line.partition(" - ")
        fields = before.split()
        tail = after.split()
        if not separator or len(fields) < 6 or len(tail) < 2:
            raise ValueError(f"malformed mountinfo line: {line[:200]!r}")
        super_options: dict[str, str] = {}
        for option in (tail[2] if len(tail) > 2 else "").split(","):
            key, _, value = option.partition("=")
            if key:
                super_options[key] = value
        mounts.append(
            Mount(
                mount_point=_unescape(fields[4]),
                options=frozenset(fields[5].split(",")),
                fstype=tail[0],
                super_options=super_options,
            )
        )
    return mounts


def read_mounts(proc_root: Path) -> list[Mount]:
    """This process's mounts, from ``<proc_root>/self/mountinfo``.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is malformed.
    """
    return parse_mountinfo((proc_root / "self" / "mountinfo").read_text(encoding="utf-8"))


def covering_mount(mounts: list[Mount], path: str) -> Mount | None:
    """The mount that ``path`` lives on: the longest mount point prefix, the last one mounted."""
    best: Mount | None = None
    for mount in mounts:
        point = mount.mount_point.rstrip("/") or "/"
        inside = point in (path, "/") or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = mount
    return best


def tmpfs_size_bytes(mount: Mount) -> int | None:
    """The ``size=`` option of a tmpfs in bytes (``65536k``, ``64m``), or None when absent."""
    match = _SIZE.fullmatch(mount.super_options.get("size", ""))
    if match is None:
        return None
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
