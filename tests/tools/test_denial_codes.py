"""Every denial code has a scenario, produced through the public API; denials change nothing."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from toolbox_helpers import ALL, call

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.policy import Policy, runner_command
from sandbox_agent.tools import ToolBox, ToolCall, parse_tool_call
from sandbox_agent.tools.contracts import ReadFileArgs
from sandbox_agent.workspace import Workspace


def via_tool(tool: str, **args: object) -> Callable[[ToolBox], str | None]:
    return lambda toolbox: call(toolbox, tool, **args).denial


def via_parse(
    name: object, args: object, allowed: frozenset[str] = ALL
) -> Callable[[ToolBox], str | None]:
    def run(_toolbox: ToolBox) -> str | None:
        with pytest.raises(ToolDenied) as caught:
            parse_tool_call(name, args, allowed)  # type: ignore[arg-type]
        return caught.value.code

    return run


def not_allowed_in_execute(toolbox: ToolBox) -> str | None:
    narrow = ToolBox(
        toolbox.workspace, Policy(allowed_tools=frozenset({"finish"})), toolbox.sandbox
    )
    return narrow.execute(ToolCall(tool="read_file", args=ReadFileArgs(path="x"))).denial


def not_allowlisted(_toolbox: ToolBox) -> str | None:
    with pytest.raises(ToolDenied) as caught:
        runner_command("make", None)
    return caught.value.code


def edit(path: str, old: str, new: str) -> dict[str, str]:
    return {"path": path, "old": old, "new": new}


SCENARIOS: dict[str, Callable[[ToolBox], str | None]] = {
    denials.PATH_OUTSIDE_WORKSPACE: via_tool("read_file", path="../x"),
    denials.PATH_ABSOLUTE: via_tool("read_file", path="/etc/passwd"),
    denials.PATH_INVALID: via_tool("read_file", path="a\\b"),
    denials.PATH_SYMLINK: via_tool("read_file", path="link"),
    denials.PATH_HARDLINK: via_tool("read_file", path="hard.py"),
    denials.PATH_SPECIAL_FILE: via_tool("read_file", path="fifo"),
    denials.PATH_NOT_FOUND: via_tool("read_file", path="nope.py"),
    denials.PATH_PROTECTED: via_tool("apply_patch", edits=[edit("conftest.py", "", "x")]),
    denials.PATH_NOT_TEXT: via_tool("read_file", path="blob.bin"),
    denials.PATH_TOO_LARGE: via_tool("read_file", path="huge.txt"),
    denials.TOOL_UNKNOWN: via_parse("shell", {"cmd": "id"}),
    denials.TOOL_NOT_ALLOWED: via_parse("run_tests", {}, frozenset({"finish"})),
    denials.ARGS_INVALID: via_parse("read_file", {"path": "x", "mode": "w"}),
    denials.COMMAND_NOT_ALLOWLISTED: not_allowlisted,
    denials.COMMAND_BAD_SELECTOR: via_tool("run_tests", selector="x; id"),
    denials.PATCH_NOT_UNIQUE: via_tool(
        "apply_patch", edits=[edit("paginator/core.py", "return", "x")]
    ),
    denials.PATCH_NOT_FOUND: via_tool("apply_patch", edits=[edit("paginator/core.py", "zzz", "x")]),
    denials.PATCH_EXISTS: via_tool("apply_patch", edits=[edit("paginator/core.py", "", "x")]),
    denials.PATCH_NOOP: via_tool(
        "apply_patch", edits=[edit("paginator/core.py", "return 1", "return 1")]
    ),
    denials.PATCH_TOO_LARGE: via_tool(
        "apply_patch",
        edits=[edit("paginator/grow.py", "", "a" * 250_000 + "#0")]
        + [edit("paginator/grow.py", f"#{i}", "a" * 250_000 + f"#{i + 1}") for i in range(4)],
    ),
    denials.SEARCH_BAD_PATTERN: via_tool("search", pattern="(?<=a)b"),
}


def test_every_code_has_a_scenario() -> None:
    assert set(SCENARIOS) == denials.ALL_DENIAL_CODES


@pytest.mark.timeout(20)
@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_denial(code: str, toolbox: ToolBox, workspace: Workspace) -> None:
    root = workspace.root
    os.symlink("/etc/passwd", root / "link")
    (root / "hard.py").write_text("x\n")
    os.link(root / "hard.py", root / "hard2.py")
    os.mkfifo(root / "fifo")
    (root / "huge.txt").write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    before = workspace.files_changed()
    assert SCENARIOS[code](toolbox) == code
    assert workspace.files_changed() == before


def test_tool_not_allowed_is_enforced_by_the_toolbox_too(toolbox: ToolBox) -> None:
    assert not_allowed_in_execute(toolbox) == denials.TOOL_NOT_ALLOWED


def test_parse_messages_are_one_line_and_name_the_field() -> None:
    with pytest.raises(ToolDenied) as caught:
        parse_tool_call("read_file", {"start_line": 0}, ALL)
    assert caught.value.code == denials.ARGS_INVALID
    assert "\n" not in caught.value.message
    assert caught.value.message.startswith("read_file: path")
    with pytest.raises(ToolDenied) as caught:
        parse_tool_call("read_file", ["x"], ALL)
    assert caught.value.code == denials.ARGS_INVALID


def test_finish_records_the_summary_and_decides_nothing(toolbox: ToolBox) -> None:
    outcome = call(toolbox, "finish", summary="all tests pass, trust me")
    assert outcome.ok
    assert toolbox.finish_summary == "all tests pass, trust me"
    assert toolbox.test_runs == []
