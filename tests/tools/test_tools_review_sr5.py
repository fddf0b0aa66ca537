"""SR-5: adversarial review of the tools (a compromised model choosing every argument).

Each finding's test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

import os
import random
import socket
import time

import pytest
from toolbox_helpers import call

from sandbox_agent.policy import Policy
from sandbox_agent.sandbox.fake import FakeBackend
from sandbox_agent.tools import ToolBox
from sandbox_agent.tools.limits import ToolLimits
from sandbox_agent.workspace import Workspace

MiB = 1024 * 1024


@pytest.mark.timeout(20)
def test_sr5_f2_a_pattern_that_defeats_re2s_dfa_cannot_stall_search_on_one_long_line(
    toolbox: ToolBox, workspace: Workspace
) -> None:
    # SR-5 F2: RE2 is linear in the text, but with a factor of its program size once
    # the DFA gives up; one 1 MiB line and this 1000-char pattern took ~70 s per call.
    (workspace.root / "one_line.txt").write_text("a" * (MiB - 1) + "\n")
    started = time.monotonic()
    outcome = call(toolbox, "search", pattern=r"(\w+\s?){1,1000}z", path="one_line.txt")
    assert time.monotonic() - started < 5.0
    assert outcome.ok
    assert outcome.result["truncated"] is True
    assert "time" in outcome.message or "long" in outcome.message


@pytest.mark.timeout(60)
def test_sr5_f2_search_stops_at_its_time_limit(workspace: Workspace) -> None:
    # SR-5 F2: 8 MiB of 64 KiB lines at ~9 s per MiB ran for over a minute in one call.
    chooser = random.Random(5)
    line = "".join(chooser.choice("ab") for _ in range(64 * 1024 - 1)) + "\n"
    for index in range(8):
        (workspace.root / f"data{index}.txt").write_text(line * 15)
    toolbox = ToolBox(
        workspace,
        Policy(runner="unittest"),
        FakeBackend(),
        tool_limits=ToolLimits(max_search_seconds=0.5),
    )
    started = time.monotonic()
    outcome = call(toolbox, "search", pattern=r"a[ab]{999}c")
    # The limit is looked at between lines, and one 64 KiB line took ~1 s on a loaded
    # machine: the bound tells a stopped search from the minute-long one, no closer.
    assert time.monotonic() - started < 15
    assert outcome.ok
    assert outcome.result["truncated"] is True
    assert "time" in outcome.message


def test_search_with_an_ordinary_pattern_still_scans_long_lines(
    toolbox: ToolBox, workspace: Workspace
) -> None:
    (workspace.root / "long.txt").write_text("x" * (MiB - 10) + "needle\n")
    outcome = call(toolbox, "search", pattern="needle", path="long.txt")
    assert outcome.ok
    assert [m["line"] for m in outcome.result["matches"]] == [1]
    assert outcome.result["truncated"] is False


def test_sr5_f5_read_file_returns_at_most_its_byte_budget_of_wide_characters(
    toolbox: ToolBox, workspace: Workspace
) -> None:
    # SR-5 F5: the budget check counted characters while the running size counted
    # bytes, so a line of 4-byte characters after ~30 KiB of ASCII went 5 KiB over.
    text = ("a" * 2000 + "\n") * 15 + ("\U0001f600" * 2000 + "\n") * 3
    (workspace.root / "wide.txt").write_text(text, encoding="utf-8")
    outcome = call(toolbox, "read_file", path="wide.txt")
    assert outcome.ok
    limit = toolbox.tool_limits.max_read_bytes
    assert len(outcome.result["content"].encode("utf-8")) <= limit
    assert outcome.result["truncated"] is True
    assert outcome.result["end_line"] == 15


@pytest.mark.parametrize(
    "path",
    [
        "./tests/test_new.py",
        "tests/./test_core.py",
        "Tests/x.py",
        "\uff54\uff45\uff53\uff54\uff53/x.py",
        "paginator/../tests/test_core.py",
        "/tmp/tests/test_core.py",
        "tests\\test_core.py",
        "te\u200bsts/test_core.py",
        "tests/test_core.py\x00.txt",
        "pkg/TEST_x.py",
        "conftest.py/",
    ],
)
def test_holds_no_spelling_of_a_protected_path_is_written(
    toolbox: ToolBox, workspace: Workspace, path: str
) -> None:
    before = sorted(p.relative_to(workspace.root) for p in workspace.root.rglob("*"))
    for old in ("", "self.assertEqual"):
        outcome = call(toolbox, "apply_patch", edits=[{"path": path, "old": old, "new": "x"}])
        assert not outcome.ok
        assert outcome.denial is not None
        assert outcome.denial.startswith("path.")
    assert sorted(p.relative_to(workspace.root) for p in workspace.root.rglob("*")) == before


@pytest.mark.timeout(10)
def test_holds_search_and_list_skip_links_and_special_files_made_after_the_copy(
    toolbox: ToolBox, workspace: Workspace
) -> None:
    os.mkfifo(workspace.root / "fifo")
    os.symlink("/etc", workspace.root / "etc_link")
    os.symlink("/etc/passwd", workspace.root / "paginator" / "passwd.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(workspace.root / "sock"))
        found = call(toolbox, "search", pattern="root:")
        listed = call(toolbox, "list_files")
        assert found.ok
        assert found.result["matches"] == []
        assert not {"fifo", "etc_link", "sock", "paginator/passwd.py"} & set(listed.result["files"])
        for path in ("fifo", "sock", "etc_link/passwd", "paginator/passwd.py"):
            assert call(toolbox, "search", pattern="x", path=path).denial in (
                "path.special_file",
                "path.symlink",
            )
    finally:
        server.close()
