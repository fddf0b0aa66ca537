"""The six tools: contracts, the parser and the ToolBox that executes them.

The codes a tool call is refused with are ``sandbox_agent.denials``.
"""

from sandbox_agent.tools.contracts import TOOL_NAMES, ToolCall, ToolName, ToolOutcome
from sandbox_agent.tools.limits import ToolLimits
from sandbox_agent.tools.parse import parse_tool_call
from sandbox_agent.tools.testrun import TestRun, judge
from sandbox_agent.tools.toolbox import ToolBox

__all__ = [
    "TOOL_NAMES",
    "TestRun",
    "ToolBox",
    "ToolCall",
    "ToolLimits",
    "ToolName",
    "ToolOutcome",
    "judge",
    "parse_tool_call",
]
