"""Tool definitions come from the contracts; past calls are read back only when well formed."""

from __future__ import annotations

import json

from sandbox_agent.providers.tooldefs import (
    anthropic_tools,
    openai_tools,
    past_call,
    raw_tool_call,
    tool_definitions,
)
from sandbox_agent.tools.contracts import ARGS_MODELS, TOOL_NAMES


def test_every_tool_is_defined_from_its_contract() -> None:
    definitions = tool_definitions()
    assert [d["name"] for d in definitions] == list(TOOL_NAMES)
    for definition in definitions:
        schema = definition["input_schema"]
        assert isinstance(schema, dict)
        fields = ARGS_MODELS[definition["name"]].model_fields  # type: ignore[index]
        assert set(schema["properties"]) == set(fields)
        assert schema["additionalProperties"] is False
        assert "$ref" not in json.dumps(schema)


def test_the_api_shapes_wrap_the_same_schema() -> None:
    (definition,) = tool_definitions(["apply_patch"])
    (anthropic,) = anthropic_tools([definition])
    (openai,) = openai_tools([definition])
    assert anthropic["input_schema"] == definition["input_schema"]
    assert openai["function"]["parameters"] == definition["input_schema"]  # type: ignore[index]


def test_past_calls_are_read_back_only_when_well_formed() -> None:
    offered = {"read_file", "finish"}
    assert past_call(raw_tool_call("read_file", {"path": "a"}), offered) == (
        "read_file",
        {"path": "a"},
    )
    assert past_call(raw_tool_call("shell", {"cmd": "ls"}), offered) is None
    assert past_call('{"tool": "finish", "args": "x"}', offered) is None
    assert past_call('{"tool": "finish", "args": {}, "extra": 1}', offered) is None
    assert past_call("not json", offered) is None
