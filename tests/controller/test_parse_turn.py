"""Raw model output: one JSON object per turn; anything else is refused, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_agent.controller.parse import claimed_tool, denial_kind, parse_turn
from sandbox_agent.errors import ToolDenied
from sandbox_agent.tools.contracts import TOOL_NAMES, ReadFileArgs

ALL = frozenset(TOOL_NAMES)


def refusal(text: str, allowed: frozenset[str] = ALL) -> str:
    with pytest.raises(ToolDenied) as caught:
        parse_turn(text, allowed)
    return caught.value.code


def test_valid_call() -> None:
    call = parse_turn('{"tool": "read_file", "args": {"path": "a.py", "start_line": 2}}', ALL)
    assert call.tool == "read_file"
    assert isinstance(call.args, ReadFileArgs)
    assert call.args.start_line == 2


def test_one_markdown_fence_is_tolerated() -> None:
    call = parse_turn('```json\n{"tool": "list_files", "args": {}}\n```', ALL)
    assert call.tool == "list_files"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "output.not_json"),
        ("I will now read the file.", "output.not_json"),
        ('{"tool": "read_file", "args": {"path": "a"}', "output.not_json"),
        ('{"tool": "list_files", "args": {}} {"tool": "finish"}', "output.not_json"),
        ("[1, 2]", "output.not_a_call"),
        ('{"args": {}}', "output.not_a_call"),
        ('{"tool": 7, "args": {}}', "output.not_a_call"),
        ('{"tool": "finish", "args": {"summary": "x"}, "thought": "y"}', "output.not_a_call"),
        ('{"tool": "list_files", "tool": "finish", "args": {}}', "output.not_a_call"),
        ('{"tool": "shell", "args": {"cmd": "id"}}', "tool.unknown"),
        ('{"tool": "read_file", "args": {"path": "a", "mode": "rb"}}', "args.invalid"),
        ('{"tool": "read_file", "args": {"path": 3}}', "args.invalid"),
        ('{"tool": "read_file", "args": {"path": "a", "start_line": "2"}}', "args.invalid"),
        ('{"tool": "read_file", "args": []}', "args.invalid"),
        ('{"tool": "apply_patch", "args": {"edits": []}}', "args.invalid"),
        ("[" * 100_000, "output.not_json"),
    ],
)
def test_refusals(text: str, code: str) -> None:
    assert refusal(text) == code


def test_tool_outside_the_allowlist_is_a_policy_denial() -> None:
    code = refusal('{"tool": "apply_patch", "args": {"edits": []}}', frozenset({"read_file"}))
    assert code == "tool.not_allowed"
    assert denial_kind(code) == "policy"


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("output.not_json", "invalid_output"),
        ("args.invalid", "invalid_output"),
        ("tool.unknown", "policy"),
        ("path.absolute", "policy"),
        ("path.protected", "policy"),
        ("command.bad_selector", "policy"),
        ("patch.not_found", "tool_error"),
        ("path.not_found", "tool_error"),
    ],
)
def test_how_refusals_count(code: str, kind: str) -> None:
    assert denial_kind(code) == kind


def test_claimed_tool() -> None:
    assert claimed_tool('{"tool": "shell", "args": {}}') == "shell"
    assert claimed_tool("nonsense") == "?"


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda children: (
                st.lists(children, max_size=4)
                | st.dictionaries(st.text(max_size=8), children, max_size=4)
            ),
            max_leaves=20,
        ).map(json.dumps),
    )
)
def test_never_crashes(text: str) -> None:
    try:
        parse_turn(text, ALL)
    except ToolDenied as denial:
        code = denial.code
    else:
        return
    assert code.split(".")[0] in ("output", "tool", "args")
