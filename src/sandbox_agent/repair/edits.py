"""The smallest edit between two texts of a module, in ``apply_patch``'s terms: a run of
whole lines that occurs exactly once in the old text, and what replaces it (the repair
strategy's candidates, and the evaluation's generated plans).
"""

from __future__ import annotations

from typing import NamedTuple


class Edit(NamedTuple):
    old: str
    new: str


def shared_ends(old: list[str], new: list[str]) -> tuple[int, int]:
    """How many lines ``old`` and ``new`` share at their start, then at their end (the
    two never overlap): what an edit between them need not replace."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    return prefix, suffix


def unique_edit(old_text: str, new_text: str, *, end_first: bool = False) -> Edit | None:
    """The smallest run of whole lines whose replacement turns ``old_text`` into
    ``new_text``, widened by a line at a time (its start first; its end first with
    ``end_first``) until it occurs exactly once in ``old_text`` (``apply_patch``'s rule);
    None when no run does."""
    old = old_text.splitlines(keepends=True)
    new = new_text.splitlines(keepends=True)
    prefix, suffix = shared_ends(old, new)
    start, end_old, end_new = prefix, len(old) - suffix, len(new) - suffix
    while True:
        piece = "".join(old[start:end_old])
        if piece and old_text.count(piece) == 1:
            return Edit(piece, "".join(new[start:end_new]))
        if end_first and end_old < len(old):
            end_old, end_new = end_old + 1, end_new + 1
        elif start > 0:
            start -= 1
        elif end_old < len(old):
            end_old, end_new = end_old + 1, end_new + 1
        else:
            return None


def edit_for(old_text: str, new_text: str) -> Edit:
    """``unique_edit``, or the whole text when no smaller run is unique (the repair
    strategy's edit of a module)."""
    return unique_edit(old_text, new_text) or Edit(old_text, new_text)
