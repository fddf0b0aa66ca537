"""Lexical checks on a tool path, before anything touches the disk.

A tool path is relative to the workspace root, written with ``/``. It is refused
(``ToolDenied``) when it is absolute, climbs with ``..``, or holds anything that
could be read two ways: NUL, backslash, control characters, unencodable or non-NFC
Unicode, empty components. ``.`` components and one trailing ``/`` are dropped.
"""

from __future__ import annotations

import unicodedata

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied

MAX_COMPONENT_BYTES = 255
MAX_DEPTH = 64


def split_path(path: str, *, allow_root: bool = False) -> tuple[str, ...]:
    """Validate ``path`` lexically and return its components.

    Args:
        path: a path relative to the workspace root, ``/``-separated.
        allow_root: accept ``""`` or ``"."`` (the root itself) and return ``()``.

    Raises:
        ToolDenied: ``path.absolute``, ``path.outside_workspace`` or ``path.invalid``.
    """
    if "\x00" in path:
        raise ToolDenied(denials.PATH_INVALID, "the path contains a NUL character")
    if "\\" in path:
        raise ToolDenied(denials.PATH_INVALID, "use '/' as the separator, never '\\'")
    if any(unicodedata.category(char) in ("Cc", "Cs", "Cf") for char in path):
        raise ToolDenied(denials.PATH_INVALID, "the path contains control or format characters")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolDenied(denials.PATH_INVALID, "the path is not valid Unicode") from None
    if unicodedata.normalize("NFC", path) != path:
        raise ToolDenied(denials.PATH_INVALID, "write the path in Unicode NFC form")
    if path.startswith("/"):
        raise ToolDenied(denials.PATH_ABSOLUTE, "give a path relative to the workspace root")
    trimmed = path[:-1] if path.endswith("/") else path
    if trimmed in ("", "."):
        if allow_root:
            return ()
        raise ToolDenied(denials.PATH_INVALID, "give the path of a file, not the root")
    parts: list[str] = []
    for part in trimmed.split("/"):
        if part == "":
            raise ToolDenied(denials.PATH_INVALID, "the path has an empty component ('//')")
        if part == "..":
            raise ToolDenied(
                denials.PATH_OUTSIDE_WORKSPACE, "'..' is not allowed: stay inside the workspace"
            )
        if part == ".":
            continue
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise ToolDenied(denials.PATH_INVALID, "a path component is longer than 255 bytes")
        parts.append(part)
    if not parts and not allow_root:
        raise ToolDenied(denials.PATH_INVALID, "give the path of a file, not the root")
    if len(parts) > MAX_DEPTH:
        raise ToolDenied(denials.PATH_INVALID, f"the path is deeper than {MAX_DEPTH} folders")
    return tuple(parts)
