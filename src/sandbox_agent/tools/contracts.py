"""Pydantic contracts of the six tools: the arguments the model may send, and what comes back.

Input crosses a trust boundary here, so every model has ``extra="forbid"``.
The controller (never a provider) validates raw model output into a ``ToolCall``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

# The names live below the policy (``policy.toolnames``); this module is the tools' face.
from sandbox_agent.policy.toolnames import TOOL_NAMES as TOOL_NAMES  # noqa: PLC0414
from sandbox_agent.policy.toolnames import ToolName as ToolName  # noqa: PLC0414

MAX_PATH_CHARS = 4096
MAX_PATTERN_CHARS = 1000
MAX_EDITS = 20
MAX_EDIT_CHARS = 256 * 1024
MAX_SUMMARY_CHARS = 4000
MAX_SELECTOR_CHARS = 300
MAX_LINE_NUMBER = 10**9
"""No line number is larger: a number out of range is an invalid output, never one that
fails later to format or to add up (issue 20, SR-8 C8-3)."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ListFilesArgs(_Args):
    """List files under a folder of the workspace (the root when ``path`` is absent)."""

    path: str = Field("", max_length=MAX_PATH_CHARS)


class ReadFileArgs(_Args):
    """Read a text file, optionally a 1-based, inclusive range of lines."""

    path: str = Field(max_length=MAX_PATH_CHARS)
    start_line: int | None = Field(None, ge=1, le=MAX_LINE_NUMBER)
    end_line: int | None = Field(None, ge=1, le=MAX_LINE_NUMBER)


class SearchArgs(_Args):
    """Search file contents with a linear-time (RE2) regular expression."""

    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS)
    path: str = Field("", max_length=MAX_PATH_CHARS)


class Edit(_Args):
    """Replace the one occurrence of ``old`` with ``new``; ``old == ""`` creates a new file."""

    path: str = Field(max_length=MAX_PATH_CHARS)
    old: str = Field(max_length=MAX_EDIT_CHARS)
    new: str = Field(max_length=MAX_EDIT_CHARS)


class ApplyPatchArgs(_Args):
    """Apply every edit or none."""

    edits: list[Edit] = Field(min_length=1, max_length=MAX_EDITS)


class RunTestsArgs(_Args):
    """Run the tests (runner chosen by the controller), optionally one selector."""

    selector: str | None = Field(None, max_length=MAX_SELECTOR_CHARS)


class FinishArgs(_Args):
    """End the run. The summary is recorded; it decides nothing."""

    summary: str = Field(max_length=MAX_SUMMARY_CHARS)


ARGS_MODELS: dict[ToolName, type[_Args]] = {
    "list_files": ListFilesArgs,
    "read_file": ReadFileArgs,
    "search": SearchArgs,
    "apply_patch": ApplyPatchArgs,
    "run_tests": RunTestsArgs,
    "finish": FinishArgs,
}

ToolArgs = Annotated[
    ListFilesArgs | ReadFileArgs | SearchArgs | ApplyPatchArgs | RunTestsArgs | FinishArgs,
    Field(union_mode="left_to_right"),
]


class ToolCall(BaseModel):
    """One validated tool call: a known tool name and arguments that passed its contract."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: ToolName
    args: ToolArgs


class ToolOutcome(BaseModel):
    """What one tool call produced. A denial changes nothing and carries a stable code."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    ok: bool
    denial: str | None = None
    """A stable code such as ``path.protected``; None when the call was allowed."""
    message: str = ""
    """One line for the model: what happened, or what to do after a denial."""
    result: dict[str, Any] = Field(default_factory=dict)
    """Bounded, JSON-serialisable payload (file text, matches, test evidence, ...)."""
    duration_ms: float = 0.0
