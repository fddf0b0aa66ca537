"""The six tool names: what a policy allows and the tools implement.

Below both (issue 31): ``policy`` decides which of them a run may call, ``tools``
(``tools.contracts``) gives each its arguments and runs it.
"""

from __future__ import annotations

from typing import Literal

ToolName = Literal["list_files", "read_file", "search", "apply_patch", "run_tests", "finish"]
TOOL_NAMES: tuple[ToolName, ...] = (
    "list_files",
    "read_file",
    "search",
    "apply_patch",
    "run_tests",
    "finish",
)
