"""apply_patch: exactly-once edits, new files, protected paths, size limits, all or none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolbox_helpers import call

from sandbox_agent import denials
from sandbox_agent.tools import ToolBox, ToolLimits
from sandbox_agent.workspace import Workspace


def edit(path: str, old: str, new: str) -> dict[str, str]:
    return {"path": path, "old": old, "new": new}


def test_replace_once_and_create(toolbox: ToolBox, workspace: Workspace) -> None:
    outcome = call(
        toolbox,
        "apply_patch",
        edits=[
            edit("paginator/core.py", "return n // size", "return -(-n // size)"),
            edit("paginator/extra.py", "", "X = 1\n"),
            edit("paginator/new_pkg/mod.py", "", "Y = 2\n"),
        ],
    )
    assert outcome.ok, outcome.message
    assert outcome.result["files"] == [
        "paginator/core.py",
        "paginator/extra.py",
        "paginator/new_pkg/mod.py",
    ]
    assert "return -(-n // size)" in (workspace.root / "paginator/core.py").read_text()
    assert (workspace.root / "paginator/new_pkg/mod.py").read_text() == "Y = 2\n"
    assert workspace.files_changed() == [
        "paginator/core.py",
        "paginator/extra.py",
        "paginator/new_pkg/mod.py",
    ]


@pytest.mark.parametrize(
    ("edits", "said"),
    [
        ([edit("paginator/core.py", "return 1", "return 2")], "applied 1 edit to 1 file"),
        (
            [
                edit("paginator/core.py", "return 1", "return 2"),
                edit("paginator/core.py", "return 2", "return 3"),
            ],
            "applied 2 edits to 1 file",
        ),
        (
            [
                edit("paginator/core.py", "return 1", "return 2"),
                edit("paginator/extra.py", "", "X = 1\n"),
            ],
            "applied 2 edits to 2 files",
        ),
    ],
)
def test_the_outcome_counts_in_plain_words(
    toolbox: ToolBox, edits: list[dict[str, str]], said: str
) -> None:
    # It said "applied 1 edits to 1 files" (issue 30), in run's table and to the model.
    outcome = call(toolbox, "apply_patch", edits=edits)
    assert outcome.ok, outcome.message
    assert outcome.message == said


def test_edits_to_one_file_apply_in_order(toolbox: ToolBox, workspace: Workspace) -> None:
    outcome = call(
        toolbox,
        "apply_patch",
        edits=[
            edit("paginator/core.py", "return 1", "return 2"),
            edit("paginator/core.py", "return 2", "return 3"),
        ],
    )
    assert outcome.ok
    assert "return 3" in (workspace.root / "paginator/core.py").read_text()


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        (edit("paginator/core.py", "return", "x"), denials.PATCH_NOT_UNIQUE),
        (edit("paginator/core.py", "not there", "x"), denials.PATCH_NOT_FOUND),
        (edit("paginator/core.py", "", "x"), denials.PATCH_EXISTS),
        (edit("paginator/core.py", "return 1", "return 1"), denials.PATCH_NOOP),
        (edit("tests/test_core.py", "3)", "5)"), denials.PATH_PROTECTED),
        (edit("tests/test_new.py", "", "x"), denials.PATH_PROTECTED),
        (edit("conftest.py", "", "import os\n"), denials.PATH_PROTECTED),
        (edit("sitecustomize.py", "", "import os\n"), denials.PATH_PROTECTED),
        (edit("paginator/evil.pth", "", "import os\n"), denials.PATH_PROTECTED),
        (edit("blob.bin", "binary", "x"), denials.PATH_NOT_TEXT),
        (edit("../outside.py", "", "x"), denials.PATH_OUTSIDE_WORKSPACE),
        (edit("/tmp/x.py", "", "x"), denials.PATH_ABSOLUTE),
    ],
)
def test_refused_edits_change_nothing(
    toolbox: ToolBox, workspace: Workspace, patch: dict[str, str], code: str
) -> None:
    outcome = call(toolbox, "apply_patch", edits=[patch])
    assert not outcome.ok
    assert outcome.denial == code
    assert workspace.files_changed() == []


def test_an_edit_that_changes_nothing_is_refused_not_applied(
    toolbox: ToolBox, workspace: Workspace
) -> None:
    """A small model copies ``old`` into ``new`` unchanged; "applied" would tell it the
    fix is in (issue 29). The refusal says why, and nothing is written."""
    outcome = call(
        toolbox,
        "apply_patch",
        edits=[
            edit("paginator/core.py", "return 1", "return 2"),
            edit("paginator/core.py", "return n // size", "return n // size"),
        ],
    )
    assert outcome.denial == denials.PATCH_NOOP
    assert "edit 2" in outcome.message
    assert "the same" in outcome.message
    assert workspace.files_changed() == []


def test_all_or_none_when_a_later_edit_is_bad(toolbox: ToolBox, workspace: Workspace) -> None:
    outcome = call(
        toolbox,
        "apply_patch",
        edits=[
            edit("paginator/core.py", "return 1", "return 2"),
            edit("paginator/made.py", "", "x"),
            edit("paginator/core.py", "missing", "y"),
        ],
    )
    assert outcome.denial == denials.PATCH_NOT_FOUND
    assert workspace.files_changed() == []


def test_all_or_none_when_a_write_fails_midway(workspace: Workspace, toolbox: ToolBox) -> None:
    """A failure while committing (here a link swapped in) rolls back every earlier write."""
    from sandbox_agent.workspace.safefs import SafeFS

    seen: list[str] = []

    def sabotage(_fd: int, name: str) -> None:
        seen.append(name)
        if name == "late" and seen.count("late") == 2:  # the commit, after validation passed
            os.symlink("/tmp", workspace.root / "paginator" / "late" / "zz")

    (workspace.root / "paginator" / "late").mkdir()
    workspace.fs = SafeFS(workspace.root, hook=sabotage)
    outcome = call(
        toolbox,
        "apply_patch",
        edits=[
            edit("paginator/core.py", "return 1", "return 2"),
            edit("paginator/a_new.py", "", "x"),
            edit("paginator/late/zz", "", "y"),
        ],
    )
    assert outcome.denial == denials.PATCH_EXISTS
    assert seen.count("late") == 2
    os.unlink(workspace.root / "paginator" / "late" / "zz")
    os.rmdir(workspace.root / "paginator" / "late")
    assert workspace.files_changed() == []
    assert not [
        n for n in os.listdir(workspace.root / "paginator") if n.startswith(".sandbox-agent-tmp")
    ]


def test_size_limits(workspace: Workspace, toolbox: ToolBox) -> None:
    small = ToolBox(
        workspace,
        toolbox.policy,
        toolbox.sandbox,
        tool_limits=ToolLimits(max_patch_file_bytes=100, max_patch_total_bytes=150),
    )
    too_big = call(small, "apply_patch", edits=[edit("paginator/big.py", "", "x" * 101)])
    assert too_big.denial == denials.PATCH_TOO_LARGE
    too_much = call(
        small,
        "apply_patch",
        edits=[edit("paginator/a.py", "", "x" * 80), edit("paginator/b.py", "", "x" * 80)],
    )
    assert too_much.denial == denials.PATCH_TOO_LARGE
    assert workspace.files_changed() == []


def test_a_link_planted_later_is_not_written_through(
    workspace: Workspace, toolbox: ToolBox, tmp_path: Path
) -> None:
    target = tmp_path / "victim.py"
    target.write_text("return 1\n")
    os.symlink(target, workspace.root / "paginator" / "linked.py")
    outcome = call(toolbox, "apply_patch", edits=[edit("paginator/linked.py", "return 1", "pwned")])
    assert outcome.denial == denials.PATH_SYMLINK
    assert target.read_text() == "return 1\n"
