"""Stable denial codes: the one list of every reason a tool call can be refused.

A denial changes nothing. Its code is stable (tests, traces and evaluation reports
count by it); its message is one line the model can act on. Each code has a unit test.

A vocabulary, not a rule: it imports nothing, so every layer that refuses something
(``workspace`` for paths, ``policy`` for commands, ``tools`` for arguments) names its
refusal from here (issue 31; it was ``policy/denials.py``, which ``workspace`` could
only import by reaching up a layer).
"""

from __future__ import annotations

from typing import Final

PATH_OUTSIDE_WORKSPACE: Final = "path.outside_workspace"
"""A ``..`` component: the path would leave the workspace."""
PATH_ABSOLUTE: Final = "path.absolute"
"""The path starts with ``/``; tool paths are relative to the workspace root."""
PATH_INVALID: Final = "path.invalid"
"""NUL, backslash, control characters, non-NFC or unencodable Unicode, empty components."""
PATH_SYMLINK: Final = "path.symlink"
"""A component is a symbolic link (never followed)."""
PATH_HARDLINK: Final = "path.hardlink"
"""The file has more than one hard link (it may alias a file outside the workspace)."""
PATH_SPECIAL_FILE: Final = "path.special_file"
"""A device, FIFO or socket."""
PATH_NOT_FOUND: Final = "path.not_found"
"""No such file or folder (or a file where a folder was needed, and the reverse)."""
PATH_PROTECTED: Final = "path.protected"
"""Tests, test configuration, start-up hooks, evaluation and policy folders."""
PATH_NOT_TEXT: Final = "path.not_text"
"""The file is binary or not UTF-8."""
PATH_TOO_LARGE: Final = "path.too_large"
"""The file is larger than the tool reads."""
TOOL_UNKNOWN: Final = "tool.unknown"
"""Not one of the six tools."""
TOOL_NOT_ALLOWED: Final = "tool.not_allowed"
"""A known tool that this task's allowlist leaves out."""
ARGS_INVALID: Final = "args.invalid"
"""The arguments do not match the tool's contract."""
COMMAND_NOT_ALLOWLISTED: Final = "command.not_allowlisted"
"""A runner name with no entry in the command allowlist."""
COMMAND_BAD_SELECTOR: Final = "command.bad_selector"
"""The test selector does not match the runner's strict pattern."""
PATCH_NOT_UNIQUE: Final = "patch.not_unique"
"""``old`` occurs more than once in the file."""
PATCH_NOT_FOUND: Final = "patch.not_found"
"""``old`` does not occur in the file."""
PATCH_EXISTS: Final = "patch.exists"
"""``old`` is empty (create a file) but the file already exists."""
PATCH_TOO_LARGE: Final = "patch.too_large"
"""The patched file or the whole patch would exceed its size limit."""
PATCH_NOOP: Final = "patch.noop"
"""``old`` equals ``new``: the edit would change nothing (it is not "applied")."""
SEARCH_BAD_PATTERN: Final = "search.bad_pattern"
"""The pattern is not a valid RE2 expression (no backreferences or lookaround)."""

ALL_DENIAL_CODES: Final[frozenset[str]] = frozenset(
    {
        PATH_OUTSIDE_WORKSPACE,
        PATH_ABSOLUTE,
        PATH_INVALID,
        PATH_SYMLINK,
        PATH_HARDLINK,
        PATH_SPECIAL_FILE,
        PATH_NOT_FOUND,
        PATH_PROTECTED,
        PATH_NOT_TEXT,
        PATH_TOO_LARGE,
        TOOL_UNKNOWN,
        TOOL_NOT_ALLOWED,
        ARGS_INVALID,
        COMMAND_NOT_ALLOWLISTED,
        COMMAND_BAD_SELECTOR,
        PATCH_NOT_UNIQUE,
        PATCH_NOT_FOUND,
        PATCH_EXISTS,
        PATCH_TOO_LARGE,
        PATCH_NOOP,
        SEARCH_BAD_PATTERN,
    }
)
