"""The smallest ``apply_patch`` edit from one text to another (generated suites' plans)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from sandbox_agent.repair.edits import unique_edit


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
    edit = unique_edit(before, after, end_first=True)
    if edit is None:
        raise ValueError(f"{label}: no unique edit turns one text into the other")
    if before.replace(edit.old, edit.new, 1) != after:
        raise ValueError(f"{label}: the edit does not reproduce the change")
    return PatchEdit(old=edit.old, new=edit.new)
