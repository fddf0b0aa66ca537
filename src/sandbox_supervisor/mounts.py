"""``/proc/self/mountinfo``, parsed: which mount covers a path, with which options.

Per-mount options (``ro``, ``noexec``, ...) come from field 6; the filesystem's own
options (``size=64m``) from the fields after the ``-`` separator. gVisor writes the
same layout with fewer options (see ``attest``).
"""

from __future__ import annotations

import os

# String methods, not ``re``, and a plain class, not a NamedTuple: PID 1 imports this
# on every sandbox run, and start-up time is per run (issue 3).
_OCTAL_DIGITS = frozenset("01234567")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class Mount:
    """One mountinfo line."""

    __slots__ = ("fstype", "mount_point", "options", "super_options")

    def __init__(
        self,
        mount_point: str,
        options: frozenset[str],
        fstype: str,
        super_options: dict[str, str],
    ) -> None:
        self.mount_point = mount_point
        self.options = options
        self.fstype = fstype
        self.super_options = super_options

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mount):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable super_options, as before

    def __repr__(self) -> str:
        return (
            f"Mount(mount_point={self.mount_point!r}, options={self.options!r}, "
            f"fstype={self.fstype!r}, super_options={self.super_options!r})"
        )

    def _key(self) -> tuple[str, frozenset[str], str, dict[str, str]]:
        return self.mount_point, self.options, self.fstype, self.super_options


def _unescape(field: str) -> str:
    """Undo the kernel's ``\\ooo`` octal escapes (space, tab, newline, backslash)."""
    if "\\" not in field:
        return field
    first, *rest = field.split("\\")
    parts = [first]
    for part in rest:
        code = part[:3]
        if len(code) == 3 and _OCTAL_DIGITS.issuperset(code):
            parts.append(chr(int(code, 8)) + part[3:])
        else:
            parts.append("\\" + part)
    return "".join(parts)


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


def read_mounts(proc_root: str | os.PathLike[str]) -> list[Mount]:
    """This process's mounts, from ``<proc_root>/self/mountinfo``.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is malformed.
    """
    with open(os.path.join(proc_root, "self", "mountinfo"), encoding="utf-8") as file:
        return parse_mountinfo(file.read())


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
    size = mount.super_options.get("size", "")
    number, unit = (size[:-1], size[-1].lower()) if size[-1:].isalpha() else (size, "")
    if not (number.isascii() and number.isdigit()) or unit not in _SIZE_UNITS:
        return None
    return int(number) * _SIZE_UNITS[unit]
