"""The controller loop: budgets checked in one place before each model call, the trace
saved in a ``finally``, the terminal status computed from evidence (``status.py``).

Reading order: ``run_task`` sets a run up and closes it; ``agent_loop`` is the ``tools``
strategy's loop; what both strategies share is in ``loop_common`` (re-exported here) and
``steps`` (every model call and tool call, counted and recorded).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox_agent import prompts
from sandbox_agent.controller import records
from sandbox_agent.controller.loop_common import (
    MAX_REPLY_CHARS_IN_TRACE,
    LoopState,
    LoopStop,
    _cancelled_after_reply,
    _context_fitter,
    _count_refusal,
    _fit,
    _provider_failed,
    check_budgets,
)
from sandbox_agent.controller.models import RunConfig, RunResult, ToolCallRecord
from sandbox_agent.controller.parse import claimed_tool, parse_turn
from sandbox_agent.controller.steps import Steps, Strategy
from sandbox_agent.controller.turns import GREEDY_PROVIDERS, Answered, TurnMemory
from sandbox_agent.errors import ToolDenied
from sandbox_agent.providers.base import (
    CUT_OFF_NOTE,
    Exchange,
    ModelReply,
    ModelRequest,
)
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend
from sandbox_agent.tools.contracts import RunTestsArgs, ToolCall, ToolOutcome

if TYPE_CHECKING:
    from sandbox_agent.tools.testrun import TestRun

__all__ = [
    "MAX_REPLY_CHARS_IN_TRACE",
    "LoopState",
    "LoopStop",
    "_cancelled_after_reply",
    "_context_fitter",
    "_fit",
    "_provider_failed",
    "agent_loop",
    "check_budgets",
    "new_run_id",
    "run_task",
]
EventSink = Callable[[dict[str, Any]], None]


def new_run_id() -> str:
    """A sortable, unique run id: UTC time, then randomness."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:12]


def run_task(
    config: RunConfig,
    *,
    cancel: CancelToken | None = None,
    on_event: EventSink | None = None,
    on_final_workspace: Callable[[Path], None] | None = None,
    sandbox: SandboxBackend | None = None,
) -> RunResult:
    """Run one task to a terminal status computed from evidence.

    Writes ``RUN_DIR/trace.jsonl``, ``result.json`` and ``diff.patch`` (RUN_DIR is
    ``<trace_dir>/<run_id>``) and seals them (``sandbox_agent.evidence``).

    Args:
        config: what to run, with which provider and limits.
        cancel: set from outside (a signal, the API) to stop the run; it unwinds cleanly.
            Its deadline is tightened to the run's wall-clock budget.
        on_event: receives each trace event (already redacted) as it is written.
        on_final_workspace: called with the workspace root after the final test run,
            before clean-up (the eval harness copies the final tree from there).
        sandbox: the backend that runs tests; a ``DockerBackend`` when None.

    Raises:
        UsageError: the fixture, repository, provider or plan is not usable.
        SetupError: the host lacks what the run needs (Docker, the runner image).
    """
    from sandbox_agent.controller.run import RunSession

    started = time.monotonic()
    token = cancel or CancelToken()
    deadline = started + config.budgets.max_wall_seconds
    token.deadline = deadline if token.deadline is None else min(token.deadline, deadline)
    run_id = config.run_id or new_run_id()
    opened = RunSession.open(config, run_id=run_id, sandbox=sandbox, deadline=token.deadline)
    with opened as session:
        return session.run(token, started, on_event, on_final_workspace)


@Strategy
def agent_loop(steps: Steps) -> LoopStop:
    """Ask, parse, execute, observe; until finish, a budget, cancellation or a failure.

    The model reads plain text (``records``): the task with the files and which of them
    are read-only, then one answer per call. A call repeated on an unchanged tree is
    answered from memory, and a greedy model stuck repeating is sampled (``turns``). The
    first ``finish`` while the visible tests fail is answered with the failures; the
    second ends the loop (``_ToolsLoop.finish``).
    """
    return _ToolsLoop(steps).run()


class _ToolsLoop:
    def __init__(self, steps: Steps) -> None:
        config, toolbox = steps.config, steps.toolbox
        self.steps = steps
        self.config = config
        self.toolbox = toolbox
        self.trace = steps.trace
        self.state = steps.state
        self.cancel = steps.cancel
        self.allowed = frozenset(config.allowed_tools)
        self.memory = TurnMemory(
            greedy=config.provider in GREEDY_PROVIDERS, seed=config.repair.seed
        )
        self.read_only: records.ReadOnly | None = None
        if "apply_patch" in self.allowed:  # the protected paths, said up front
            self.read_only = lambda path: toolbox.policy.protected_reason(path) is not None

    def run(self) -> LoopStop:
        from sandbox_agent.providers.tooldefs import tool_definitions

        config, state, memory = self.config, self.state, self.memory
        tools = tool_definitions(config.allowed_tools)
        files, cut = self.toolbox.repository_files(records.MAX_FILES_WITH_TASK)
        task = records.task_message(config.task, files, cut, read_only=self.read_only)
        while True:
            if (stop := check_budgets(config, state, self.cancel)) is not None:
                return stop
            request = ModelRequest(
                system=prompts.TOOLS_SYSTEM,
                task=task,
                tools=tools,
                history=state.history,
                deadline=self.cancel.deadline,
                sampling=memory.sampling(state.used.iterations + 1),
            )
            reply = self.steps.complete(request)
            if isinstance(reply, LoopStop):
                return reply
            cut_off = reply.truncated or CUT_OFF_NOTE in reply.notes
            try:
                call = parse_turn(reply.text, self.allowed, cut_off=cut_off)
            except ToolDenied as refusal:
                _count_refusal(state, self.trace, refusal, claimed_tool(reply.text))
                memory.invalid(reply.text)
                self.answer(reply, records.refusal_observation(refusal.code, refusal.message))
                continue
            state.used.tool_calls += 1
            if call.tool == "finish":
                if (stop := self.finish(call, reply)) is not None:
                    return stop
                continue
            fitter = self.steps.fitter
            earlier = memory.recall(call, fitter.elided if fitter is not None else 0)
            if earlier is not None:
                self.repeat(call, earlier, reply)
            elif (stop := self.execute(call, reply)) is not None:
                return stop

    def answer(self, reply: ModelReply, observation: str) -> None:
        self.state.history = [
            *self.state.history,
            Exchange(reply=reply.text, observation=observation),
        ]

    def execute(self, call: ToolCall, reply: ModelReply) -> LoopStop | None:
        """Run one call through the tool box, record it and answer the model."""
        toolbox, memory = self.toolbox, self.memory
        runs = len(toolbox.test_runs)
        outcome = self.steps.execute(call)
        if isinstance(outcome, LoopStop):
            return outcome
        run = toolbox.test_runs[-1] if len(toolbox.test_runs) > runs else None
        record = self.record(outcome, call)
        if call.tool == "apply_patch" and outcome.ok:
            memory.edited()
        if run is not None:
            memory.tests = run
        observation = records.observation(outcome, run=run, read_only=self.read_only)
        observation += records.patch_hint(call.args, outcome.denial)
        position = len(self.state.history)
        turn = self.state.used.iterations
        memory.remember(call, Answered(turn, position, records.gist(observation), record))
        self.answer(reply, observation)
        return None

    def record(self, outcome: ToolOutcome, call: ToolCall) -> ToolCallRecord:
        """Count a call's denial, keep its record and trace it (``Steps.record``)."""
        record = records.tool_call_record(outcome, redact=self.trace.redact_text)
        self.steps.record(call, record)
        return record

    def repeat(self, call: ToolCall, earlier: Answered, reply: ModelReply) -> None:
        """A call made already on this tree: answered from memory, not run again, and
        counted as the call it is (a policy denial again)."""
        before = earlier.record
        summary = f"repeat of turn {earlier.turn}: {before.result.get('summary', '')}"
        record = before.model_copy(
            update={
                "duration_ms": 0.0,
                "result": {**before.result, "summary": summary[: records.MAX_SUMMARY_CHARS]},
            }
        )
        self.steps.record(call, record, repeat_of=earlier.turn)
        self.memory.repeated()
        self.answer(reply, prompts.TOOLS_REPEATED.format(turn=earlier.turn, gist=earlier.gist))

    def finish(self, call: ToolCall, reply: ModelReply) -> LoopStop | None:
        """End the loop; or, the first time while the visible tests fail, answer with the
        failures and go on (None). "Fail": the last run on this tree failed; when the
        tree changed since the last run, the controller runs the tests itself first (a
        passing run is then the final verdict, reused). No turn left (a budget, a cancel,
        the wall clock): it ends, and no test is run for it."""
        state, trace = self.state, self.trace
        state.model_summary = getattr(call.args, "summary", "")
        arguments = call.args.model_dump()
        failed: TestRun | None = None
        if not self.memory.finish_held and self.turn_left():
            found = self.failing_run()
            if isinstance(found, LoopStop):
                return found
            # None too when the controller's own run took the last tool call
            failed = found if self.turn_left() else None
        if failed is None:
            trace.emit("tool_call", tool="finish", arguments=arguments, ok=True)
            state.tool_calls.append(
                ToolCallRecord(tool="finish", ok=True, denial=None, duration_ms=0.0, result={})
            )
            return LoopStop("finished", "the model finished")
        self.memory.finish_held = True
        counts = records.run_counts(failed)
        held = f"held: the visible tests still fail ({counts}); asked to fix them or finish again"
        trace.emit(
            "tool_call",
            tool="finish",
            arguments=arguments,
            ok=True,
            held=True,
            outcome={"summary": held},
        )
        state.tool_calls.append(
            ToolCallRecord(
                tool="finish", ok=True, denial=None, duration_ms=0.0, result={"summary": held}
            )
        )
        output = records.failing_output(failed)
        shown = prompts.TOOLS_TEST_OUTPUT.format(output=output) if output else ""
        self.answer(reply, prompts.TOOLS_FINISH_HELD.format(counts=counts, output=shown))
        return None

    def turn_left(self) -> bool:
        """Whether the budgets allow the model another turn."""
        return check_budgets(self.config, self.state, self.cancel) is None

    def failing_run(self) -> TestRun | LoopStop | None:
        """The failing run that holds a first ``finish``, if any; a stop if the
        controller's own run failed on our side."""
        toolbox, memory = self.toolbox, self.memory
        if "run_tests" not in toolbox.policy.allowed_tools:
            return None
        run = memory.tests
        if run is None and memory.generation == 0:
            return None  # nothing changed and nothing ran: no evidence either way
        if run is None or (run.passed and run.selector is not None):
            runs = len(toolbox.test_runs)
            outcome = self.steps.tool("run_tests", RunTestsArgs())
            if isinstance(outcome, LoopStop):
                return outcome
            if len(toolbox.test_runs) == runs:
                return None  # refused (no runner): the final verdict says what it says
            run = memory.tests = toolbox.test_runs[-1]
        return None if run.passed else run
