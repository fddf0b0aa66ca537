"""Raw model output -> a validated ``ToolCall``. The controller's job, never the provider's.

A turn is exactly one JSON object ``{"tool": NAME, "args": {...}}`` (a single Markdown
code fence around it is tolerated, as real models add one). Anything else is refused
with a ``ToolDenied`` whose code says how it is counted (``turn_kind``):

- ``output.*`` and ``args.invalid``: an invalid output (the model is told why);
- ``tool.unknown``, ``tool.not_allowed`` and the path/command codes of the policy:
  a policy denial, an attempt at a capability the task does not grant;
- anything else (``patch.not_found``, ``path.not_found``, ...): a tool error the model
  can fix, counted only as a tool call.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from sandbox_agent.errors import ToolDenied
from sandbox_agent.tools.contracts import ToolCall

MAX_RAW_OUTPUT_CHARS = 8 * 1024 * 1024
OUTPUT_NOT_JSON = "output.not_json"
OUTPUT_NOT_A_CALL = "output.not_a_call"
OUTPUT_TOO_LARGE = "output.too_large"
CALL_EXAMPLE = '{"tool": "read_file", "args": {"path": "README.md"}}'
"""Shown after an invalid output: the exact shape, as a complete call."""

DenialKind = Literal["invalid_output", "policy", "tool_error"]

POLICY_CODES = frozenset(
    {
        "tool.unknown",
        "tool.not_allowed",
        "path.outside_workspace",
        "path.absolute",
        "path.invalid",
        "path.symlink",
        "path.hardlink",
        "path.special_file",
        "path.protected",
        "command.not_allowlisted",
        "command.bad_selector",
    }
)


def denial_kind(code: str) -> DenialKind:
    """How a refusal is counted against the budgets."""
    if code.startswith("output.") or code == "args.invalid":
        return "invalid_output"
    if code in POLICY_CODES:
        return "policy"
    return "tool_error"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        # Two readings of one object (first or last key wins?) is an ambiguity an attacker uses.
        raise ToolDenied(OUTPUT_NOT_A_CALL, "a key appears twice in one JSON object")
    return dict(pairs)


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and stripped.count("```") == 2:
        body = stripped[3:-3]
        first_line, _, rest = body.partition("\n")
        return (rest if first_line.strip() in ("", "json") else body).strip()
    return stripped


def claimed_tool(text: str) -> str:
    """The tool name a refused turn asked for, if it named one (for the record only)."""
    try:
        data = json.loads(_strip_fence(text))
    except (ValueError, RecursionError):
        return "?"
    name = data.get("tool") if isinstance(data, dict) else None
    return name[:64] if isinstance(name, str) else "?"


def parse_turn(text: str, allowed: frozenset[str]) -> ToolCall:
    """Parse one turn of raw model output.

    Args:
        text: the model's raw output.
        allowed: this task's tool allowlist.

    Raises:
        ToolDenied: with an ``output.*``, ``tool.*`` or ``args.invalid`` code and a
            one-line message telling the model what to send instead.
    """
    from sandbox_agent.tools.parse import parse_tool_call

    if len(text) > MAX_RAW_OUTPUT_CHARS:
        raise ToolDenied(OUTPUT_TOO_LARGE, f"send at most {MAX_RAW_OUTPUT_CHARS} characters")
    try:
        data = json.loads(_strip_fence(text), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        # ValueError, not only JSONDecodeError: an integer past Python's 4300-digit
        # limit is refused by ``int()`` itself, and must be an invalid output (SR-8 C8-3).
        raise ToolDenied(
            OUTPUT_NOT_JSON,
            'reply with exactly one JSON object {"tool": NAME, "args": {...}} and nothing '
            f"else, for example {CALL_EXAMPLE}",
        ) from None
    if not isinstance(data, dict) or set(data) - {"tool", "args"} or "tool" not in data:
        hint = ' (not "name" and "arguments")' if isinstance(data, dict) and "name" in data else ""
        raise ToolDenied(
            OUTPUT_NOT_A_CALL,
            f'the object must have exactly the keys "tool" (a string) and "args" (an object)'
            f"{hint}, for example {CALL_EXAMPLE}",
        )
    name, args = data["tool"], data.get("args", {})
    if not isinstance(name, str):
        raise ToolDenied(OUTPUT_NOT_A_CALL, '"tool" must be a string')
    return parse_tool_call(name, args, allowed)
