"""list_files, read_file and search: bounded results, binary refused, linear-time patterns."""

from __future__ import annotations

import time
from pathlib import Path

from toolbox_helpers import call

from sandbox_agent import denials
from sandbox_agent.tools import ToolBox, ToolLimits
from sandbox_agent.workspace import Workspace


def test_list_files_sorted_and_bounded(toolbox: ToolBox, workspace: Workspace) -> None:
    outcome = call(toolbox, "list_files")
    assert outcome.ok
    assert outcome.result["files"] == [
        "blob.bin",
        "paginator/__init__.py",
        "paginator/core.py",
        "tests/test_core.py",
    ]
    small = ToolBox(
        workspace, toolbox.policy, toolbox.sandbox, tool_limits=ToolLimits(max_list_files=2)
    )
    outcome = call(small, "list_files", path="paginator")
    assert outcome.result == {
        "path": "paginator",
        "files": ["paginator/__init__.py", "paginator/core.py"],
        "truncated": False,
    }
    assert call(small, "list_files").result["truncated"] is True


def test_list_files_of_a_file_lists_that_file(toolbox: ToolBox, workspace: Workspace) -> None:
    """As ``ls FILE`` does; a real model listed a file it had been shown, and gave up on
    the refusal. A link or a missing name is still refused."""
    outcome = call(toolbox, "list_files", path="paginator/core.py")
    assert outcome.ok
    assert outcome.result["files"] == ["paginator/core.py"]
    (workspace.root / "link.py").symlink_to("paginator/core.py")
    assert call(toolbox, "list_files", path="link.py").denial == denials.PATH_SYMLINK
    assert call(toolbox, "list_files", path="nope.py").denial == denials.PATH_NOT_FOUND


def test_read_file_whole_and_ranges(toolbox: ToolBox) -> None:
    whole = call(toolbox, "read_file", path="paginator/core.py")
    assert whole.ok
    assert whole.result["content"].startswith("def pages(n, size):\n")
    assert whole.result["total_lines"] == 6
    part = call(toolbox, "read_file", path="paginator/core.py", start_line=5, end_line=6)
    assert part.result["content"] == "def first():\n    return 1\n"
    assert part.result["start_line"] == 5
    assert part.result["end_line"] == 6
    past = call(toolbox, "read_file", path="paginator/core.py", start_line=50)
    assert past.denial == denials.ARGS_INVALID


def test_read_file_refuses_binary(toolbox: ToolBox) -> None:
    outcome = call(toolbox, "read_file", path="blob.bin")
    assert not outcome.ok
    assert outcome.denial == denials.PATH_NOT_TEXT


def test_a_one_megabyte_line_is_cut_and_searchable(toolbox: ToolBox, workspace: Workspace) -> None:
    (workspace.root / "big.py").write_text("x = '" + "a" * 1_000_000 + "NEEDLE'\nprint(x)\n")
    outcome = call(toolbox, "read_file", path="big.py")
    assert outcome.ok
    assert len(outcome.result["content"]) < 3000
    assert "[line cut: 1000012 characters]" in outcome.result["content"]
    assert outcome.result["total_lines"] == 2
    found = call(toolbox, "search", pattern="NEEDLE", path="big.py")
    assert found.ok
    assert [m["line"] for m in found.result["matches"]] == [1]
    assert len(found.result["matches"][0]["text"]) < 300


def test_read_file_is_bounded_in_lines(workspace: Workspace, toolbox: ToolBox) -> None:
    (workspace.root / "long.py").write_text("".join(f"line{i}\n" for i in range(1000)))
    small = ToolBox(
        workspace, toolbox.policy, toolbox.sandbox, tool_limits=ToolLimits(max_read_lines=10)
    )
    outcome = call(small, "read_file", path="long.py")
    assert outcome.result["end_line"] == 10
    assert outcome.result["truncated"] is True
    assert "start_line 11" in outcome.message


def test_search_regex_and_bounds(toolbox: ToolBox, workspace: Workspace) -> None:
    outcome = call(toolbox, "search", pattern=r"def \w+\(")
    assert outcome.ok
    assert [(m["path"], m["line"]) for m in outcome.result["matches"]] == [
        ("paginator/core.py", 1),
        ("paginator/core.py", 5),
        ("tests/test_core.py", 7),
    ]
    (workspace.root / "many.txt").write_text("hit\n" * 500)
    bounded = call(toolbox, "search", pattern="hit", path="many.txt")
    assert len(bounded.result["matches"]) == 100
    assert bounded.result["truncated"] is True


def test_search_rejects_non_re2_patterns(toolbox: ToolBox) -> None:
    for pattern in [r"(a)\1", r"(?=x)", "(unclosed"]:
        outcome = call(toolbox, "search", pattern=pattern)
        assert outcome.denial == denials.SEARCH_BAD_PATTERN, pattern


def test_search_has_no_catastrophic_backtracking(toolbox: ToolBox, workspace: Workspace) -> None:
    (workspace.root / "evil.txt").write_text("a" * 50_000 + "!\n")
    started = time.monotonic()
    outcome = call(toolbox, "search", pattern=r"(a+)+$", path="evil.txt")
    assert outcome.ok
    assert time.monotonic() - started < 2.0


def test_search_skips_binary_files(toolbox: ToolBox, tmp_path: Path) -> None:
    outcome = call(toolbox, "search", pattern="binary")
    assert outcome.result["matches"] == []
    del tmp_path
