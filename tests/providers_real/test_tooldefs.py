"""Tool definitions come from the contracts; past calls are read back only when well formed."""

from __future__ import annotations

import json

from sandbox_agent import prompts
from sandbox_agent.providers.chat_protocol import call_schema, tools_in_prompt
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


BOUNDS_AND_WORDS = {"maxLength", "minLength", "maximum", "minimum", "maxItems", "minItems"}
BOUNDS_AND_WORDS |= {"title", "description", "default"}


def _keys(node: object, under_properties: bool = False) -> set[str]:
    """Every schema keyword in ``node`` (a property's name is not a keyword)."""
    if isinstance(node, dict):
        found = set() if under_properties else set(node)
        for key, value in node.items():
            found |= _keys(value, under_properties=key == "properties" and not under_properties)
        return found
    if isinstance(node, list):
        return set().union(*(_keys(item) for item in node)) if node else set()
    return set()


def test_a_prompt_describes_each_tool_by_a_signature_and_an_example() -> None:
    """Issue 29: the schemas (``maxLength: 262144``, titles) cost a small model ~700
    tokens of its first turn; a signature and an example say what it needs."""
    text = tools_in_prompt(tool_definitions())
    assert "read_file(path, start_line?, end_line?)" in text
    assert "apply_patch(edits: [{path, old, new}])" in text
    assert "run_tests(selector?)" in text
    for name in TOOL_NAMES:
        assert prompts.TOOLS_EXAMPLES[name] in text
        assert prompts.TOOLS_PURPOSES[name] in text
    assert "maxLength" not in text
    assert "additionalProperties" not in text
    assert len(text) < 1500  # the schemas took 3,300 characters (docs/MODELS.md)


def test_the_response_grammar_keeps_the_call_structure_only() -> None:
    """A newer llama.cpp refuses a grammar with ``maxLength: 262144`` (a repetition far
    past its limit); the contracts bound the lengths when the controller validates."""
    schema = call_schema(tool_definitions())
    assert not _keys(schema) & BOUNDS_AND_WORDS
    branches = {b["properties"]["tool"]["const"]: b["properties"]["args"] for b in schema["oneOf"]}
    assert list(branches) == list(TOOL_NAMES)
    edits = branches["apply_patch"]["properties"]["edits"]
    assert edits["items"]["required"] == ["path", "old", "new"]
    assert edits["items"]["additionalProperties"] is False
    assert branches["read_file"]["required"] == ["path"]
    # The native definitions keep their descriptions, without Pydantic's titles.
    assert "title" not in _keys([d["input_schema"] for d in tool_definitions()])
