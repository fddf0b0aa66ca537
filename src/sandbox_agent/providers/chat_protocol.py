"""How a chat completions request asks for a tool call: four protocols, chosen by name.

- ``tools``: native tool definitions, the server decides whether to call one;
- ``required``: native tools with ``tool_choice: "required"`` (llama-server then
  constrains decoding to a tool call with a grammar);
- ``json_schema``: no native tools; the tools are described in the system prompt and
  ``response_format`` constrains the answer to ``{"tool": NAME, "args": {...}}``, one
  branch per tool with its argument schema;
- ``text``: no native tools and no constraint; the tools are described in the prompt.

Whatever the protocol, the reply goes to the controller as raw text and is validated
there; a constraint only shapes what the server samples. docs/MODELS.md gives each
protocol's measured invalid-output rate with the local model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sandbox_agent.providers.base import ModelRequest
from sandbox_agent.providers.tooldefs import openai_tools, past_call

ToolProtocol = Literal["tools", "required", "json_schema", "text"]
TOOL_PROTOCOLS: tuple[ToolProtocol, ...] = ("tools", "required", "json_schema", "text")
NATIVE: frozenset[ToolProtocol] = frozenset({"tools", "required"})
EMPTY_REPLY_PLACEHOLDER = "(no output)"


def tools_in_prompt(definitions: Sequence[Mapping[str, object]]) -> str:
    """The tool list for a prompt: one line per tool, its argument schema as JSON."""
    lines = ["Tools (name: purpose; arguments as JSON schema):"]
    for tool in definitions:
        schema = json.dumps(tool["input_schema"], separators=(",", ":"))
        lines.append(f"- {tool['name']}: {tool.get('description', '')} args={schema}")
    return "\n".join(lines)


def call_schema(definitions: Sequence[Mapping[str, object]]) -> dict[str, Any]:
    """A JSON schema that only a call of one of ``definitions`` satisfies."""
    branches = [
        {
            "type": "object",
            "properties": {"tool": {"const": tool["name"]}, "args": tool["input_schema"]},
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
