"""The one parser from a model's (name, args) to a validated ``ToolCall``."""

from __future__ import annotations

from pydantic import ValidationError

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.tools.contracts import ARGS_MODELS, TOOL_NAMES, ToolCall

MAX_SHOWN_NAME = 60
MAX_MESSAGE_CHARS = 300


def parse_tool_call(name: str, args: object, allowed: frozenset[str]) -> ToolCall:
    """Validate a tool name and its arguments against the contracts and the allowlist.

    Args:
        name: the tool the model asked for.
        args: its arguments, as decoded from JSON (a dict).
        allowed: this task's tool allowlist.

    Raises:
        ToolDenied: ``tool.unknown``, ``tool.not_allowed`` or ``args.invalid``.
    """
    if not isinstance(name, str) or name not in ARGS_MODELS:
        shown = repr(name)[:MAX_SHOWN_NAME]
        raise ToolDenied(
            denials.TOOL_UNKNOWN, f"unknown tool {shown}; use one of: {', '.join(TOOL_NAMES)}"
        )
    if name not in allowed:
        raise ToolDenied(
            denials.TOOL_NOT_ALLOWED,
            f"'{name}' is not allowed in this task; allowed: {', '.join(sorted(allowed))}",
        )
    if not isinstance(args, dict):
        raise ToolDenied(denials.ARGS_INVALID, f"{name}: arguments must be a JSON object")
    try:
        validated = ARGS_MODELS[name].model_validate(args)
    except ValidationError as error:
        raise ToolDenied(denials.ARGS_INVALID, f"{name}: {describe(error)}") from None
    return ToolCall.model_validate({"tool": name, "args": validated})


def describe(error: ValidationError) -> str:
    """One line naming the first bad field (never echoing the input value)."""
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "arguments"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"[:MAX_MESSAGE_CHARS]
