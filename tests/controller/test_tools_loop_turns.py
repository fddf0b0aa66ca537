"""The ``tools`` loop made fit for a real model (issue 29, item 2): what the model reads
after each call (plain text, numbered lines, one sentence per fact, the failing output),
repeated calls answered from memory and broken by sampling, and a ``finish`` while the
visible tests fail answered once with the failures. Driven by the scripted provider and
the shipped FakeBackend."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox_agent.controller.loop import LoopState, LoopStop, agent_loop
from sandbox_agent.controller.models import Budgets, RunConfig
from sandbox_agent.policy import Policy
from sandbox_agent.providers.base import ModelReply, ModelRequest
from sandbox_agent.providers.plan import Plan
from sandbox_agent.providers.scripted import ScriptedProvider
from sandbox_agent.sandbox.base import CancelToken, SandboxResult
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.tools.toolbox import ToolBox
from sandbox_agent.trace import Redactor, TraceWriter, read_chain
from sandbox_agent.workspace import Workspace

CORE = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n"
TESTS = (
    "import unittest\n\nfrom pkg.core import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        assert add(2, 3) == 5\n"
)
FAILING_OUTPUT = (
    b"F\n"
    b"======================================================================\n"
    b"FAIL: test_add (tests.test_core.AddTest.test_add)\n"
    b"----------------------------------------------------------------------\n"
    b"Traceback (most recent call last):\n"
    b'  File "/workspace/tests/test_core.py", line 8, in test_add\n'
    b"    assert add(2, 3) == 5\n"
    b"AssertionError: assert add(2, 3) == 5: left is -1, right is 5\n"
    b"\n"
    b"----------------------------------------------------------------------\n"
    b"Ran 1 test in 0.001s\n\nFAILED (failures=1)\n"
)
FIX = {"path": "pkg/core.py", "old": "return a - b", "new": "return a + b"}


def failing() -> SandboxResult:
    return completed(exit_code=1, tests_run=1, failures=1, output=FAILING_OUTPUT)


def passing() -> SandboxResult:
    return completed(exit_code=0, tests_run=1, output=b".\nRan 1 test\n\nOK\n")


def step(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


class Recording(ScriptedProvider):
    """The scripted provider, keeping every request it was asked."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        super().__init__(Plan.model_validate({"steps": steps}))
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return super().complete(request)


@dataclass
class Ran:
    stop: LoopStop
    state: LoopState
    provider: Recording
    backend: FakeBackend
    events: list[dict[str, Any]]

    def observations(self) -> list[str]:
        return [exchange.observation for exchange in self.state.history]


def run_loop(
    tmp_path: Path,
    steps: list[dict[str, Any]],
    results: list[SandboxResult] = (),  # type: ignore[assignment]
    *,
    provider: str = "scripted",
    budgets: Budgets | None = None,
) -> Ran:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "core.py").write_text(CORE)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_core.py").write_text(TESTS)
    recording = Recording(steps)
    backend = FakeBackend(list(results))
    config = RunConfig(task="Fix add.", repo=repo, provider=provider, budgets=budgets or Budgets())
    state = LoopState()
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy(runner="unittest"), backend)
        trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
        try:
            stop = agent_loop(
                config,
                provider=recording,
                toolbox=toolbox,
                trace=trace,
                state=state,
                cancel=CancelToken(),
            )
        finally:
            trace.close()
    events = read_chain(tmp_path / "run" / "trace.jsonl")
    return Ran(stop, state, recording, backend, events)


# ---------------------------------------------------------------- observations (item 3)


def test_a_file_is_shown_as_numbered_plain_text(tmp_path: Path) -> None:
    ran = run_loop(tmp_path, [step("read_file", path="pkg/core.py", start_line=2, end_line=5)])
    first = ran.observations()[0]
    assert first.splitlines()[0] == "pkg/core.py, lines 2-5 of 6:"
    assert first.splitlines()[1:] == [
        "2\t    return a - b",
        "3\t",
        "4\t",
        "5\tdef double(x):",
    ]
    assert not first.startswith("{")  # not json.dumps of the outcome


def test_a_failing_run_says_each_fact_once_and_shows_what_failed(tmp_path: Path) -> None:
    ran = run_loop(tmp_path, [step("run_tests")], [failing()])
    text = ran.observations()[0]
    assert text.splitlines()[0] == "The tests failed: 1 ran, 1 failed."
    assert "left is -1, right is 5" in text  # the values the failed assert compared
    assert "FAIL: test_add" in text
    assert 'File "tests/test_core.py", line 8' in text  # a path the tools take
    assert text.count("1 failed") == 1  # not message, reason and summary over again
    assert "Ran 1 test" not in text  # the failing part, not the runner's tail
    # The trace and the result keep what they kept: counts and a summary, no output.
    (record,) = [r for r in ran.state.tool_calls if r.tool == "run_tests"]
    assert record.result["tests_run"] == 1
    assert record.result["summary"] == "1 run, 1 failed (completed, attested=True)"
    (event,) = [e for e in ran.events if e["event"] == "tool_call" and e["tool"] == "run_tests"]
    assert "left is -1" not in json.dumps(event)


def test_listing_search_and_patch_answers_are_plain_sentences(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [
            step("list_files"),
            step("search", pattern="def ", path="pkg"),
            step("apply_patch", edits=[FIX]),
            step("apply_patch", edits=[{"path": "pkg/core.py", "old": "missing", "new": "x"}]),
        ],
    )
    listing, found, patched, refused = ran.observations()[:4]
    assert listing.splitlines() == [
        "4 files in the repository:",
        "pkg/__init__.py",
        "pkg/core.py",
        "tests/__init__.py (read-only)",
        "tests/test_core.py (read-only)",
    ]
    assert found.splitlines() == [
        "Search for \"def \" in 'pkg': 2 matches.",
        "pkg/core.py:1: def add(a, b):",
        "pkg/core.py:5: def double(x):",
    ]
    assert patched == "Applied 1 edit to pkg/core.py."
    assert refused.startswith("Refused (patch.not_found): edit 1 ('pkg/core.py'):")


# ---------------------------------------------------------------- protected paths (item 4)


def test_the_first_message_says_which_files_are_read_only(tmp_path: Path) -> None:
    ran = run_loop(tmp_path, [step("finish", summary="nothing")])
    task = ran.provider.requests[0].task
    assert "tests/test_core.py (read-only)" in task
    assert "pkg/core.py (read-only)" not in task
    assert "pkg/core.py\n" in task
    assert "conftest.py" in task  # the rule, for files not listed or not made yet
    assert "Fix the code, not the tests." in task


# ---------------------------------------------------------------- repeats (item 7)


def test_a_repeated_call_is_answered_from_memory_not_run_again(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [step("run_tests"), step("run_tests"), step("finish", summary="gave up")],
        [failing()],
        budgets=Budgets(max_iterations=3),
    )
    assert len(ran.backend.requests) == 1  # the second was not run
    repeat = ran.observations()[1]
    assert repeat.startswith("You made this same call at turn 1")
    assert "The tests failed: 1 ran, 1 failed." in repeat  # the earlier answer's gist
    calls = [e for e in ran.events if e["event"] == "tool_call" and e["tool"] == "run_tests"]
    assert [c.get("repeat_of") for c in calls] == [None, 1]
    assert ran.state.used.tool_calls == 3


def test_an_edit_makes_the_same_call_new_again(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [
            step("read_file", path="pkg/core.py"),
            step("apply_patch", edits=[FIX]),
            step("read_file", path="pkg/core.py"),
        ],
    )
    assert "return a + b" in ran.observations()[2]


def test_a_repeated_policy_denial_still_counts(tmp_path: Path) -> None:
    protected = {"path": "tests/test_core.py", "old": "== 5", "new": "== -1"}
    ran = run_loop(
        tmp_path,
        [step("apply_patch", edits=[protected]), step("apply_patch", edits=[protected])],
    )
    assert ran.state.used.policy_denials == 2
    assert ran.observations()[1].startswith("You made this same call at turn 1")
    assert "Refused (path.protected)" in ran.observations()[1]


def test_a_greedy_model_stuck_repeating_is_sampled_until_it_moves_on(tmp_path: Path) -> None:
    read = step("read_file", path="pkg/core.py")
    steps = [read, read, read, read, step("list_files"), read]
    ran = run_loop(tmp_path, steps, provider="local", budgets=Budgets(max_iterations=6))
    sampling = [request.sampling for request in ran.provider.requests]
    assert sampling[:3] == [None, None, None]  # turn 1 new, turns 2 and 3 repeats
    assert sampling[3] is not None  # after two repeats in a row
    assert sampling[3].temperature == 0.7
    assert sampling[4] is not None  # turn 4 repeated again: still sampled
    assert sampling[4].seed != sampling[3].seed  # each sampled turn its own seed
    assert sampling[5] is None  # turn 5 was new: back to the provider's own
    turns = [e for e in ran.events if e["event"] == "model_turn"]
    assert turns[3]["sampling"] == {"temperature": 0.7, "seed": sampling[3].seed}


def test_a_provider_that_samples_already_is_left_alone(tmp_path: Path) -> None:
    read = step("read_file", path="pkg/core.py")
    ran = run_loop(tmp_path, [read] * 5, budgets=Budgets(max_iterations=5))
    assert [request.sampling for request in ran.provider.requests] == [None] * 5


def test_identical_invalid_replies_count_as_repeats(tmp_path: Path) -> None:
    bad = {"raw": "I will read the file now."}
    ran = run_loop(
        tmp_path, [bad, bad, bad, bad], provider="local", budgets=Budgets(max_iterations=4)
    )
    assert ran.provider.requests[3].sampling is not None


# ---------------------------------------------------------------- finish while failing (item 8)


def test_finish_while_the_tests_fail_is_answered_once_with_the_failures(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [step("run_tests"), step("finish", summary="done"), step("finish", summary="stuck")],
        [failing()],
    )
    assert ran.stop.end == "finished"
    held = ran.observations()[1]
    assert held.startswith("Not finished yet: the tests still fail (1 ran, 1 failed).")
    assert "left is -1, right is 5" in held
    assert held.endswith("Fix them, or call finish again to stop as things are.")
    assert ran.state.model_summary == "stuck"  # the second finish ended the run
    finishes = [e for e in ran.events if e["event"] == "tool_call" and e["tool"] == "finish"]
    assert [f.get("held") for f in finishes] == [True, None]


def test_finish_after_an_untested_edit_runs_the_tests_first(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [step("apply_patch", edits=[FIX]), step("finish", summary="fixed")],
        [passing()],
    )
    assert ran.stop.end == "finished"
    assert len(ran.provider.requests) == 2  # no turn added: the tests pass
    checks = [e for e in ran.events if e["event"] == "tool_call" and e.get("by") == "controller"]
    assert [c["tool"] for c in checks] == ["run_tests"]
    assert len(ran.backend.requests) == 1  # the final verdict can reuse this run


def test_finish_after_an_untested_edit_that_fails_is_held(tmp_path: Path) -> None:
    wrong = {"path": "pkg/core.py", "old": "return a - b", "new": "return a * b"}
    ran = run_loop(
        tmp_path,
        [step("apply_patch", edits=[wrong]), step("finish", summary="fixed")],
        [failing()],
    )
    assert ran.observations()[1].startswith("Not finished yet: the tests still fail")
    assert ran.state.model_summary == "plan exhausted"  # the plan's next turn: finish


def test_finish_with_nothing_changed_and_nothing_run_ends_at_once(tmp_path: Path) -> None:
    ran = run_loop(tmp_path, [step("finish", summary="a review: the code is fine")])
    assert ran.stop.end == "finished"
    assert ran.backend.requests == []


def test_finish_on_the_last_turn_is_not_held(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [step("run_tests"), step("finish", summary="out of turns")],
        [failing()],
        budgets=Budgets(max_iterations=2),
    )
    assert ran.stop.end == "finished"
    assert ran.state.model_summary == "out of turns"
    assert len(ran.provider.requests) == 2


# ---------------------------------------------------------------- cut off (item 5)


class CutOff(Recording):
    """The first reply is cut off at the length limit, as a provider reports it."""

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        if len(self.requests) == 1:
            return ModelReply(
                text='{"tool": "apply_patch", "args": {"edits": [{"path": "pkg/co',
                truncated=True,
                notes=("cut off at the reply's token limit",),
            )
        return ModelReply(text='{"tool": "finish", "args": {"summary": "x"}}')


def test_a_reply_cut_off_at_the_limit_is_reported_as_cut_off(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("X = 1\n")
    provider = CutOff([])
    state = LoopState()
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy(runner="unittest"), FakeBackend())
        trace = TraceWriter(tmp_path / "run", "run", Redactor(), None)
        try:
            agent_loop(
                RunConfig(task="t", repo=repo),
                provider=provider,
                toolbox=toolbox,
                trace=trace,
                state=state,
                cancel=CancelToken(),
            )
        finally:
            trace.close()
    first = state.history[0].observation
    assert first.startswith("Refused (output.cut_off): Your reply was cut off")
    assert "not one JSON object" not in first
    events = read_chain(tmp_path / "run" / "trace.jsonl")
    (invalid,) = [e for e in events if e["event"] == "invalid_output"]
    assert invalid["denial"] == "output.cut_off"
    assert [e["truncated"] for e in events if e["event"] == "model_turn"] == [True, False]
    assert state.used.invalid_outputs == 1


def test_a_call_whose_answer_was_elided_may_be_made_again() -> None:
    """The context fitter's marker says "call the tool again if you need it": a repeat
    whose earlier answer the model no longer sees is run again, not refused."""
    from sandbox_agent.controller.models import ToolCallRecord
    from sandbox_agent.controller.turns import Answered, TurnMemory
    from sandbox_agent.tools.contracts import ReadFileArgs, ToolCall

    memory = TurnMemory()
    call = ToolCall(tool="read_file", args=ReadFileArgs(path="a.py"))
    record = ToolCallRecord(tool="read_file", ok=True, denial=None, duration_ms=0.0)
    memory.remember(call, Answered(turn=1, position=0, gist="a.py, lines 1-2 of 2:", record=record))
    assert memory.recall(call, elided=0) is not None
    assert memory.recall(call, elided=1) is None  # its exchange is elided now
    memory.edited()
    assert memory.recall(call, elided=0) is None  # the tree changed


def test_finish_with_no_turn_left_runs_no_test_for_it(tmp_path: Path) -> None:
    ran = run_loop(
        tmp_path,
        [step("apply_patch", edits=[FIX]), step("finish", summary="last turn")],
        [passing()],
        budgets=Budgets(max_iterations=2),
    )
    assert ran.stop.end == "finished"
    assert ran.backend.requests == []  # the final verdict runs the tests, not the loop
    assert not [e for e in ran.events if e.get("by") == "controller"]


def test_a_patch_that_kept_the_line_numbers_is_told_so(tmp_path: Path) -> None:
    numbered = {"path": "pkg/core.py", "old": "2\t    return a - b", "new": "    return a + b"}
    ran = run_loop(tmp_path, [step("apply_patch", edits=[numbered])])
    text = ran.observations()[0]
    assert text.startswith("Refused (patch.not_found)")
    assert text.endswith("copy the text after each number and its tab, not the number.")


def test_finish_after_a_run_that_did_not_finish_says_why(tmp_path: Path) -> None:
    timed_out = completed(exit_code=None, report=False).model_copy(  # type: ignore[arg-type]
        update={"status": "timeout", "reason": "the tests ran past 30 s"}
    )
    ran = run_loop(tmp_path, [step("run_tests"), step("finish", summary="done")], [timed_out])
    held = ran.observations()[1]
    assert held.startswith("Not finished yet: the tests still fail (the sandbox run ended")
    assert "0 ran" not in held
