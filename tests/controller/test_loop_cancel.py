"""A cancel that comes while the model answers: the reply is recorded, never acted on
(issue 30: the model's next ``apply_patch`` still ran after a Ctrl-C)."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.controller.loop import LoopState, agent_loop
from sandbox_agent.controller.models import RunConfig
from sandbox_agent.policy import Policy
from sandbox_agent.providers.base import ModelReply, ModelRequest, Usage
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend
from sandbox_agent.tools.toolbox import ToolBox
from sandbox_agent.trace import Redactor, TraceWriter
from sandbox_agent.workspace import Workspace

PATCH = {
    "tool": "apply_patch",
    "args": {"edits": [{"path": "core.py", "old": "X = 1", "new": "X = 2"}]},
}


class CancelledWhileAnswering:
    """A model whose answer arrives just after the user pressed Ctrl-C."""

    name = "cancelled-while-answering"

    def __init__(self, cancel: CancelToken) -> None:
        self.cancel = cancel
        self.requests = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests += 1
        self.cancel.cancel()
        return ModelReply(text=json.dumps(PATCH), usage=Usage())

    def close(self) -> None:
        """Nothing held."""


def test_no_tool_runs_after_a_cancel_that_came_during_the_model_turn(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("X = 1\n")
    cancel = CancelToken()
    provider = CancelledWhileAnswering(cancel)
    trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy(runner="unittest"), FakeBackend(), cancel=cancel)
        try:
            stop = agent_loop(
                RunConfig(task="Fix X.", repo=repo),
                provider=provider,  # type: ignore[arg-type]
                toolbox=toolbox,
                trace=trace,
                state=LoopState(),
                cancel=cancel,
            )
        finally:
            trace.close()
        changed = workspace.files_changed()

    assert stop.end == "cancelled"
    assert "not acted on" in stop.reason
    assert changed == []
    events = [json.loads(line)["event"] for line in trace.path.read_text().splitlines()]
    assert events == ["model_turn"]  # recorded, and nothing after it
    assert provider.requests == 1


def test_no_candidate_is_applied_after_a_cancel_that_came_during_its_reply(
    tmp_path: Path,
) -> None:
    from sandbox_agent.controller.repair_loop import repair_loop
    from sandbox_agent.sandbox.fake import completed

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("def f():\n    return 1\n")
    (repo / "test_core.py").write_text(
        "import unittest\nfrom core import f\n\n"
        "class T(unittest.TestCase):\n    def test_f(self):\n        assert f() == 2\n"
    )
    output = (
        b"FAIL: test_f (test_core.T.test_f)\nTraceback (most recent call last):\n"
        b'  File "/workspace/test_core.py", line 6, in test_f\n    assert f() == 2\n'
        b"AssertionError\n"
    )
    cancel = CancelToken()

    class CancelledWhileWriting:
        name = "cancelled-while-writing"

        def complete(self, request: ModelRequest) -> ModelReply:
            cancel.cancel()
            return ModelReply(text="```python\ndef f():\n    return 2\n```", usage=Usage())

        def close(self) -> None:
            """Nothing held."""

    trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
    state = LoopState()
    failing = completed(exit_code=1, tests_run=1, failures=1, output=output)
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(
            workspace, Policy(runner="unittest"), FakeBackend([failing]), cancel=cancel
        )
        try:
            stop = repair_loop(
                RunConfig(task="Fix f.", repo=repo, strategy="repair"),
                provider=CancelledWhileWriting(),  # type: ignore[arg-type]
                toolbox=toolbox,
                trace=trace,
                state=state,
                cancel=cancel,
            )
            assert stop.end == "cancelled"
            assert "return 1" in (workspace.root / "core.py").read_text()
        finally:
            trace.close()
    assert [call.tool for call in state.tool_calls] == ["run_tests", "read_file", "read_file"]
