"""Raw model output -> a validated ``ToolCall``. The controller's job, never the provider's.

A turn is exactly one JSON object ``{"tool": NAME, "args": {...}}`` (a single Markdown
code fence around it is tolerated, as real models add one). Anything else is refused
with a ``ToolDenied`` whose code says how it is counted (``turn_kind``):

- ``output.*`` and ``args.invalid``: an invalid output (the model is told why);
- ``tool.unknown``, ``tool.not_allowed`` and the path/command codes of the policy:
  a policy denial, an attempt at a capability the task does not grant;
- anything else (``patch.not_found``, ``path.not_found``, ...): a tool error the model
  can fix, counted only as a tool call.

A reply the provider reports cut off at its length limit (``ModelReply.truncated``) that
is not a complete call is ``output.cut_off``: said so, not "not JSON". The words the
model reads are in ``prompts`` (``TOOLS_*``); each refusal shows a complete example, of
the tool the reply named when it named one.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from sandbox_agent import prompts
from sandbox_agent.errors import ToolDenied
from sandbox_agent.tools.contracts import ToolCall

MAX_RAW_OUTPUT_CHARS = 8 * 1024 * 1024
OUTPUT_NOT_JSON = "output.not_json"
OUTPUT_NOT_A_CALL = "output.not_a_call"
OUTPUT_TOO_LARGE = "output.too_large"
OUTPUT_CUT_OFF = "output.cut_off"
CALL_EXAMPLE = prompts.TOOLS_EXAMPLES["list_files"]
"""Shown after an invalid output that named no known tool: the exact shape, as a complete
call that any repository answers (not a file it may not have)."""

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
        raise ToolDenied(OUTPUT_NOT_A_CALL, prompts.TOOLS_DUPLICATE_KEY)
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


def call_example(name: object = None) -> str:
    """A complete call of the tool ``name`` when it is one, else ``CALL_EXAMPLE``."""
    examples = prompts.TOOLS_EXAMPLES
    return examples[name] if isinstance(name, str) and name in examples else CALL_EXAMPLE


def _named(text: str) -> object:
    """The tool a reply seems to name (``"tool"`` or ``"name"``, even in a reply cut off)."""
    match = re.search(r'"(?:tool|name)"\s*:\s*"([a-z_]{1,32})"', text[:4096])
    return match.group(1) if match else None


def parse_turn(text: str, allowed: frozenset[str], *, cut_off: bool = False) -> ToolCall:
    """Parse one turn of raw model output.

    Args:
        text: the model's raw output.
        allowed: this task's tool allowlist.
        cut_off: the provider stopped the reply at its length limit.

    Raises:
        ToolDenied: with an ``output.*``, ``tool.*`` or ``args.invalid`` code and a
            one-line message telling the model what to send instead.
    """
    from sandbox_agent.tools.parse import parse_tool_call

    if len(text) > MAX_RAW_OUTPUT_CHARS:
        raise ToolDenied(
            OUTPUT_TOO_LARGE, prompts.TOOLS_TOO_LARGE.format(limit=MAX_RAW_OUTPUT_CHARS)
        )
    try:
        data = json.loads(_strip_fence(text), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        # ValueError, not only JSONDecodeError: an integer past Python's 4300-digit
        # limit is refused by ``int()`` itself, and must be an invalid output (SR-8 C8-3).
        if cut_off:
            raise ToolDenied(OUTPUT_CUT_OFF, prompts.TOOLS_CUT_OFF) from None
        example = call_example(_named(text))
        raise ToolDenied(OUTPUT_NOT_JSON, prompts.TOOLS_NOT_JSON.format(example=example)) from None
    if not isinstance(data, dict) or set(data) - {"tool", "args"} or "tool" not in data:
        fields: dict[str, Any] = data if isinstance(data, dict) else {}
        raise ToolDenied(
            OUTPUT_NOT_A_CALL,
            prompts.TOOLS_NOT_A_CALL.format(
                hint=prompts.TOOLS_NAME_HINT if "name" in fields else "",
                example=call_example(fields.get("tool", fields.get("name"))),
            ),
        )
    name, args = data["tool"], data.get("args", {})
    if not isinstance(name, str):
        raise ToolDenied(
            OUTPUT_NOT_A_CALL, prompts.TOOLS_TOOL_NOT_TEXT.format(example=CALL_EXAMPLE)
        )
    return parse_tool_call(name, args, allowed)
