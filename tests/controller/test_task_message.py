"""The task as the model reads it carries the repository's files (the controller's own
listing, bounded), so a model starts from paths that exist instead of guessing them."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent import prompts
from sandbox_agent.controller import records
from sandbox_agent.controller.loop import LoopState, agent_loop
from sandbox_agent.controller.models import Budgets, RunConfig
from sandbox_agent.policy import Policy
from sandbox_agent.providers.base import ModelReply, ModelRequest, Usage
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend
from sandbox_agent.tools.toolbox import ToolBox
from sandbox_agent.trace import Redactor, TraceWriter
from sandbox_agent.workspace import Workspace


def test_the_listing_follows_the_task_and_says_when_it_is_cut() -> None:
    text = records.task_message("Fix it.", ["a.py", "pkg/b.py"], False)
    assert text == "Fix it.\n\nFiles in the repository:\na.py\npkg/b.py"
    cut = records.task_message("Fix it.", ["a.py"], True)
    assert cut.endswith("(only the first 1; list_files shows a folder's)")
    assert records.task_message("Fix it.", [], False).endswith("(no files)")


class Recording:
    """A provider that finishes at once and keeps what it was asked."""

    name = "recording"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return ModelReply(text='{"tool": "finish", "args": {"summary": "done"}}', usage=Usage())

    def close(self) -> None:
        """Nothing held."""


def test_the_model_is_shown_the_workspace_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("X = 1\n")
    (repo / "README.md").write_text("hi\n")
    provider = Recording()
    config = RunConfig(task="Fix the bug.", repo=repo, budgets=Budgets(max_iterations=2))
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy(runner="unittest"), FakeBackend())
        trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
        try:
            agent_loop(
                config,
                provider=provider,  # type: ignore[arg-type]
                toolbox=toolbox,
                trace=trace,
                state=LoopState(),
                cancel=CancelToken(),
            )
        finally:
            trace.close()
    (request,) = provider.requests
    listing = "Fix the bug.\n\nFiles in the repository:\nREADME.md\npkg/core.py"
    assert request.task == listing + prompts.TOOLS_READ_ONLY


def test_read_only_files_are_marked_and_the_rule_said_once() -> None:
    """Issue 29: a model must not learn the protected paths by denials, each of which
    counts against the run."""
    protected = Policy(runner="unittest").protected_reason
    text = records.task_message(
        "Fix it.",
        ["pkg/core.py", "tests/test_core.py", "requirements.txt", "conftest.py"],
        False,
        read_only=lambda path: protected(path) is not None,
    )
    assert text.splitlines()[3:7] == [
        "pkg/core.py",
        "tests/test_core.py (read-only)",
        "requirements.txt (read-only)",
        "conftest.py (read-only)",
    ]
    assert text.endswith(prompts.TOOLS_READ_ONLY)
    assert text.count(prompts.TOOLS_READ_ONLY) == 1


def test_a_task_that_allows_no_edit_is_not_told_about_edits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("")
    provider = Recording()
    config = RunConfig(
        task="Summarise.", repo=repo, allowed_tools=("read_file", "finish"), budgets=Budgets()
    )
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy(runner="unittest"), FakeBackend())
        trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
        try:
            agent_loop(
                config,
                provider=provider,  # type: ignore[arg-type]
                toolbox=toolbox,
                trace=trace,
                state=LoopState(),
                cancel=CancelToken(),
            )
        finally:
            trace.close()
    assert provider.requests[0].task.endswith("Files in the repository:\ntests/test_a.py")
