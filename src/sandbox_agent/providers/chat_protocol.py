"""How a chat completions request asks for a tool call: four protocols, chosen by name.

- ``tools``: native tool definitions, the server decides whether to call one;
- ``required``: native tools with ``tool_choice: "required"`` (llama-server then
  constrains decoding to a tool call with a grammar);
- ``json_schema``: no native tools; the tools are described in the system prompt and
  ``response_format`` constrains the answer to ``{"tool": NAME, "args": {...}}``, one
  branch per tool with the structure of its arguments (``grammar_schema``: no length
  bounds, titles or descriptions, which a grammar does not need and a newer llama.cpp
  refuses; the contracts bound the lengths when the controller validates);
- ``text``: no native tools and no constraint; the tools are described in the prompt.

In the prompt a tool is one line, its signature and purpose, and one example call
(``tools_in_prompt``), not its JSON schema: the schemas cost ~700 tokens of a small
model's first turn (docs/MODELS.md, "The first turn's size").

Whatever the protocol, the reply goes to the controller as raw text and is validated
there; a constraint only shapes what the server samples. docs/MODELS.md gives each
protocol's measured invalid-output rate with the local model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sandbox_agent import prompts
from sandbox_agent.providers.base import ModelRequest
from sandbox_agent.providers.options import ToolProtocol
from sandbox_agent.providers.tooldefs import example, openai_tools, past_call, signature

TOOL_PROTOCOLS: tuple[ToolProtocol, ...] = ("tools", "required", "json_schema", "text")
NATIVE: frozenset[ToolProtocol] = frozenset({"tools", "required"})
EMPTY_REPLY_PLACEHOLDER = "(no output)"
GRAMMAR_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "oneOf",
        "const",
        "enum",
    }
)
"""What a response grammar keeps of a schema: its structure. Bounds (``maxLength: 262144``
is a repetition llama.cpp's grammar refuses), titles, descriptions and defaults go."""


def tools_in_prompt(definitions: Sequence[Mapping[str, object]]) -> str:
    """The tool list for a prompt: per tool, its signature, purpose and one example."""
    lines = [
        prompts.TOOLS_LINE.format(
            signature=signature(str(tool["name"]), _mapping(tool["input_schema"])),
            purpose=tool.get("description", ""),
            example=example(str(tool["name"])),
        )
        for tool in definitions
    ]
    return prompts.TOOLS_LIST.format(tools="\n".join(lines))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def grammar_schema(node: Any) -> Any:
    """``node`` with only the keys of ``GRAMMAR_KEYS`` (a property's name is kept whatever
    it is), for a server that compiles the schema into a sampling grammar."""
    if isinstance(node, Mapping):
        kept: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, Mapping):
                kept[key] = {name: grammar_schema(spec) for name, spec in value.items()}
            elif key in GRAMMAR_KEYS:
                kept[key] = grammar_schema(value)
        return kept
    if isinstance(node, list):
        return [grammar_schema(item) for item in node]
    return node


def call_schema(definitions: Sequence[Mapping[str, object]]) -> dict[str, Any]:
    """A JSON schema that only a call of one of ``definitions`` satisfies (its structure:
    the controller checks the bounds)."""
    branches = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool["name"]},
                "args": grammar_schema(tool["input_schema"]),
            },
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for tool in definitions
    ]
    return {"oneOf": branches}


def build_messages(
    request: ModelRequest, protocol: ToolProtocol, definitions: Sequence[Mapping[str, object]]
) -> list[dict[str, Any]]:
    """System prompt, task and transcript as chat messages.

    Native protocols replay a past call as ``tool_calls`` and its answer as a ``tool``
    message; the others replay every past turn as text, as the model wrote it.
    """
    offered = {str(tool["name"]) for tool in definitions}
    system = request.system
    if protocol not in NATIVE and definitions:
        system = f"{system}\n\n{tools_in_prompt(definitions)}"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": request.task},
    ]
    for turn, exchange in enumerate(request.history):
        call = past_call(exchange.reply, offered) if protocol in NATIVE else None
        if call is None:
            messages.append(
                {"role": "assistant", "content": exchange.reply or EMPTY_REPLY_PLACEHOLDER}
            )
            messages.append({"role": "user", "content": exchange.observation})
            continue
        call_id = f"call_sa{turn:04d}"
        function = {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": exchange.observation})
    return messages


def protocol_params(
    protocol: ToolProtocol, definitions: Sequence[Mapping[str, object]]
) -> dict[str, Any]:
    """The request fields that ask for a call under ``protocol`` (messages aside)."""
    if protocol == "tools":
        return {"tools": openai_tools(definitions)}
    if protocol == "required":
        return {"tools": openai_tools(definitions), "tool_choice": "required"}
    if protocol == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": call_schema(definitions)},
            }
        }
    return {}
