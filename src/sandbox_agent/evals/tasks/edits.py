"""The smallest ``apply_patch`` edit from one text to another (generated suites' plans)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from sandbox_agent.repair.splice import shared_ends


class PatchEdit(BaseModel):
    """One ``apply_patch`` edit: ``old`` occurs exactly once in the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: str
    new: str


def minimal_edit(before: str, after: str, label: str) -> PatchEdit:
    """The smallest line-wise edit turning ``before`` into ``after``, widened by context
    lines until ``old`` occurs exactly once in ``before``.

    Raises:
        ValueError: no unique edit exists (``label`` names what in the message).
    """
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    prefix, suffix = shared_ends(old_lines, new_lines)
    start, old_end, new_end = prefix, len(old_lines) - suffix, len(new_lines) - suffix
    while True:
        old = "".join(old_lines[start:old_end])
        if old and before.count(old) == 1:
            edit = PatchEdit(old=old, new="".join(new_lines[start:new_end]))
            if before.replace(old, edit.new, 1) != after:
                raise ValueError(f"{label}: the edit does not reproduce the change")
            return edit
        if old_end < len(old_lines):
            old_end, new_end = old_end + 1, new_end + 1
        elif start > 0:
            start -= 1
        else:
            raise ValueError(f"{label}: no unique edit turns one text into the other")
