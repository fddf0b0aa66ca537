"""Tool definitions for the model APIs, generated from the Pydantic contracts.

One declaration (``tools.contracts.ARGS_MODELS``) drives both what the model is offered
and what the controller validates, so the two cannot drift. The neutral form is
``{name, description, input_schema}`` (``ModelRequest.tools``); each API gets its own
wrapping of it. The words are data (``prompts.TOOLS_PURPOSES``, ``TOOLS_EXAMPLES``); a
prompt describes a tool by its one-line ``signature``, not its schema (issue 29).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from sandbox_agent import prompts
from sandbox_agent.tools.contracts import ARGS_MODELS, TOOL_NAMES, ToolName

TOOL_PURPOSES: Mapping[str, str] = prompts.TOOLS_PURPOSES


def _inline_refs(node: Any, defs: Mapping[str, Any]) -> Any:
    """Replace ``{"$ref": "#/$defs/X"}`` by X itself: some APIs refuse or ignore ``$defs``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {key: _inline_refs(value, defs) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    return node


def _untitled(node: Any) -> Any:
    """``node`` without Pydantic's ``title`` keys (a field's name again, in title case)."""
    if isinstance(node, dict):
        return {
            key: (
                {name: _untitled(value) for name, value in item.items()}
                if key == "properties" and isinstance(item, dict)
                else _untitled(item)
            )
            for key, item in node.items()
            if key != "title"
        }
    if isinstance(node, list):
        return [_untitled(item) for item in node]
    return node


def input_schema(tool: ToolName) -> dict[str, Any]:
    """The JSON schema of one tool's arguments, self-contained (no ``$ref``), untitled."""
    schema = ARGS_MODELS[tool].model_json_schema()
    inlined: dict[str, Any] = _untitled(_inline_refs(schema, schema.get("$defs", {})))
    return inlined


def signature(name: str, schema: Mapping[str, Any]) -> str:
    """``name(a, b?, c: [{x, y}])``: the arguments of one tool, optional ones marked ``?``,
    a list of objects by its objects' keys (how a prompt describes a tool)."""
    required = set(schema.get("required", ()))
    parts = []
    for field, spec in dict(schema.get("properties", {})).items():
        mark = "" if field in required else "?"
        items = spec.get("items") if isinstance(spec, dict) else None
        keys = list(items.get("properties", {})) if isinstance(items, dict) else []
        parts.append(f"{field}{mark}: [{{{', '.join(keys)}}}]" if keys else f"{field}{mark}")
    return f"{name}({', '.join(parts)})"


def example(name: str) -> str:
    """One complete call of ``name`` (``prompts.TOOLS_EXAMPLES``)."""
    return prompts.TOOLS_EXAMPLES.get(name, raw_tool_call(name, {}))


def tool_definitions(tools: Iterable[ToolName] = TOOL_NAMES) -> list[dict[str, object]]:
    """The neutral definitions ``{name, description, input_schema}`` of ``tools``, in order."""
    return [
        {"name": name, "description": TOOL_PURPOSES[name], "input_schema": input_schema(name)}
        for name in tools
    ]


def anthropic_tools(definitions: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The Messages API's ``tools`` parameter (the neutral form is already its shape)."""
    return [
        {
            "name": d["name"],
            "description": d.get("description", ""),
            "input_schema": d["input_schema"],
        }
        for d in definitions
    ]


def openai_tools(definitions: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The chat completions ``tools`` parameter: each definition wrapped as a function."""
    return [
        {
            "type": "function",
            "function": {
                "name": d["name"],
                "description": d.get("description", ""),
                "parameters": d["input_schema"],
            },
        }
        for d in definitions
    ]


class PastCall(NamedTuple):
    """A past turn that was a well-formed call of an offered tool, to replay as the API's own."""

    name: str
    args: dict[str, Any]


def past_call(reply: str, offered: Iterable[str]) -> PastCall | None:
    """Read a past reply back as a tool call, or None to replay it as plain text.

    This decides only how the transcript is shown to the API; the controller alone
    decided, at the time, whether the call was valid.
    """
    try:
        parsed = json.loads(reply)
    except (ValueError, RecursionError):  # nested past the parser's limit
        return None
    if not isinstance(parsed, dict) or set(parsed) != {"tool", "args"}:
        return None
    name, args = parsed["tool"], parsed["args"]
    if not isinstance(name, str) or name not in set(offered) or not isinstance(args, dict):
        return None
    return PastCall(name, args)


def raw_tool_call(name: str, args: object) -> str:
    """The provider-neutral raw output ``{"tool": NAME, "args": ...}``, args passed on as-is."""
    return json.dumps({"tool": name, "args": args}, ensure_ascii=False)
