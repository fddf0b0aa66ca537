"""The controller loop: budgets checked in one place before each model call, the trace
saved in a ``finally``, the terminal status computed from evidence (``status.py``).

Reading order: ``run_task`` sets a run up and closes it; ``_agent_loop`` is the loop.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox_agent.controller import records
from sandbox_agent.controller.context import ContextFitter
from sandbox_agent.controller.models import (
    BudgetUsed,
    CandidateRecord,
    RunConfig,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.controller.parse import claimed_tool, denial_kind, parse_turn
from sandbox_agent.controller.status import LoopEnd
from sandbox_agent.errors import BudgetExhausted, InfrastructureError, ModelServerGone, ToolDenied
from sandbox_agent.providers.base import Exchange, KnowsItsContext, ModelRequest, Provider
from sandbox_agent.providers.errors import ProviderError, describe
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend
from sandbox_agent.trace import TraceWriter, summarise_exception

if TYPE_CHECKING:
    from sandbox_agent.tools.toolbox import ToolBox

EventSink = Callable[[dict[str, Any]], None]
MAX_REPLY_CHARS_IN_TRACE = 4000


@dataclass
class LoopState:
    """Counters and records of one run, updated only by the loop."""

    used: BudgetUsed = field(default_factory=BudgetUsed)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    history: list[Exchange] = field(default_factory=list)
    model_summary: str | None = None
    model: str = ""
    candidates: list[CandidateRecord] = field(default_factory=list)
    """``repair``: every candidate tried (``controller.repair_loop``)."""
    provider_error: ProviderError | None = None
    """What failed when the run ends on a provider failure (``_provider_failed``)."""


@dataclass
class LoopStop:
    end: LoopEnd
    reason: str


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


def check_budgets(config: RunConfig, state: LoopState, cancel: CancelToken) -> LoopStop | None:
    """The one place budgets are checked, before each model call."""
    budgets, used = config.budgets, state.used
    if cancel.cancelled:
        return LoopStop("cancelled", "cancelled from outside")
    if cancel.deadline_passed():
        return LoopStop("timeout", f"wall clock ran out ({budgets.max_wall_seconds:g} s)")
    if used.policy_denials > budgets.max_denials:
        return LoopStop("policy_aborted", f"too many policy denials ({used.policy_denials})")
    if used.invalid_outputs > budgets.max_invalid_outputs:
        return LoopStop("budget_exhausted", f"too many invalid outputs ({used.invalid_outputs})")
    if used.iterations >= budgets.max_iterations:
        return LoopStop("budget_exhausted", f"iteration budget used ({budgets.max_iterations})")
    if used.tool_calls >= budgets.max_tool_calls:
        return LoopStop("budget_exhausted", f"tool-call budget used ({budgets.max_tool_calls})")
    return None


def agent_loop(
    config: RunConfig,
    *,
    provider: Provider,
    toolbox: ToolBox,
    trace: TraceWriter,
    state: LoopState,
    cancel: CancelToken,
) -> LoopStop:
    """Ask, parse, execute, observe; until finish, a budget, cancellation or a failure."""
    from sandbox_agent.providers.tooldefs import tool_definitions

    allowed = frozenset(config.allowed_tools)
    tools = tool_definitions(config.allowed_tools)
    fitter = _context_fitter(provider)
    task = records.task_message(config.task, *toolbox.repository_files(records.MAX_FILES_WITH_TASK))
    while True:
        if (stop := check_budgets(config, state, cancel)) is not None:
            return stop
        request = ModelRequest(
            system=records.SYSTEM_PROMPT,
            task=task,
            tools=tools,
            history=state.history,
            deadline=cancel.deadline,
        )
        if fitter is not None:
            request = _fit(fitter, request, trace)
        began = time.monotonic()
        try:
            reply = provider.complete(request)
        except BudgetExhausted as error:
            return LoopStop("budget_exhausted", str(error))
        except InfrastructureError as error:
            return _provider_failed(error, config, state, trace, cancel)
        if fitter is not None:
            fitter.observe(request, reply.usage.input_tokens)
        used = state.used
        used.iterations += 1
        used.input_tokens += reply.usage.input_tokens
        used.output_tokens += reply.usage.output_tokens
        used.cost_usd += reply.usage.cost_usd
        state.model = reply.model or state.model
        trace.emit(
            "model_turn",
            iteration=used.iterations,
            # Redacted whole, then cut: a secret across the cut would lose the tail that
            # made it recognisable and leave its first characters in the trace.
            reply=trace.redact_text(reply.text)[:MAX_REPLY_CHARS_IN_TRACE],
            reply_chars=len(reply.text),
            duration_ms=round((time.monotonic() - began) * 1000, 3),
            usage=reply.usage.model_dump(),
            notes=list(reply.notes),
            budgets=used.model_dump(),
            **({"timings": reply.timings} if reply.timings else {}),
        )
        if (stop := _cancelled_after_reply(cancel)) is not None:
            return stop
        try:
            call = parse_turn(reply.text, allowed)
        except ToolDenied as refusal:
            _count_refusal(state, trace, refusal, claimed_tool(reply.text))
            observation = records.refusal_observation(refusal.code, refusal.message)
            state.history = [*state.history, Exchange(reply=reply.text, observation=observation)]
            continue
        used.tool_calls += 1
        if call.tool == "finish":
            state.model_summary = getattr(call.args, "summary", "")
            trace.emit("tool_call", tool="finish", arguments=call.args.model_dump(), ok=True)
            state.tool_calls.append(
                ToolCallRecord(tool="finish", ok=True, denial=None, duration_ms=0.0, result={})
            )
            return LoopStop("finished", "the model finished")
        try:
            outcome = toolbox.execute(call)
        except InfrastructureError as error:
            trace.emit("tool_error", tool=call.tool, error=summarise_exception(error))
            return LoopStop("sandbox_error", f"{call.tool} failed on our side: {error}"[:300])
        if outcome.denial is not None and denial_kind(outcome.denial) == "policy":
            used.policy_denials += 1
        record = records.tool_call_record(outcome, redact=trace.redact_text)
        state.tool_calls.append(record)
        trace.emit(
            "tool_call",
            tool=call.tool,
            arguments=records.arguments_for_trace(call.args),
            ok=outcome.ok,
            denial=outcome.denial,
            outcome=record.result,
            duration_ms=record.duration_ms,
            budgets=used.model_dump(),
        )
        observation = records.observation(outcome)
        state.history = [*state.history, Exchange(reply=reply.text, observation=observation)]


def _cancelled_after_reply(cancel: CancelToken) -> LoopStop | None:
    """A cancel that came while the model was answering: its reply is recorded, never
    acted on (no tool runs after a cancel)."""
    if not cancel.cancelled:
        return None
    return LoopStop("cancelled", "cancelled from outside; the model's last reply was not acted on")


def _provider_failed(
    error: InfrastructureError,
    config: RunConfig,
    state: LoopState,
    trace: TraceWriter,
    cancel: CancelToken,
) -> LoopStop:
    """Record a provider's failure; the loop's end it makes.

    A request cut by cancellation or by the run's wall clock is not a provider failure:
    it is recorded as ``request_stopped`` and the run ends ``CANCELLED`` or ``TIMEOUT``.
    """
    record = describe(error)
    if (stop := check_budgets(config, state, cancel)) is not None and stop.end in (
        "cancelled",
        "timeout",
    ):
        trace.emit("request_stopped", why=stop.end, message=record.line())
        return stop
    diagnostics = error.diagnostics if isinstance(error, ModelServerGone) else None
    state.provider_error = record
    trace.emit(
        "provider_error",
        error=summarise_exception(error),
        provider_error=record.model_dump(),
        **({"diagnostics": diagnostics} if diagnostics else {}),
    )
    return LoopStop("provider_error", f"the provider failed: {record.line()}")


def _context_fitter(provider: Provider) -> ContextFitter | None:
    """A fitter for a provider that knows its context window; None for the others."""
    if not isinstance(provider, KnowsItsContext):
        return None
    budget = provider.prompt_token_budget()
    return None if budget is None else ContextFitter(budget_tokens=budget)


def _fit(fitter: ContextFitter, request: ModelRequest, trace: TraceWriter) -> ModelRequest:
    """``request`` fitted to the context; a trace event whenever more was elided or cut."""
    before = (fitter.elided, len(fitter.events))
    fitted = fitter.fit(request)
    if (fitter.elided, len(fitter.events)) != before:
        trace.emit(
            "context_fitted",
            elided_observations=fitter.elided,
            estimated_prompt_tokens=fitter.estimate(fitted),
            budget_tokens=fitter.budget_tokens,
        )
    return fitted


def _count_refusal(state: LoopState, trace: TraceWriter, refusal: ToolDenied, tool: str) -> None:
    """An invalid output, or a call to a tool that is unknown or not allowed (a denial)."""
    used = state.used
    if denial_kind(refusal.code) == "invalid_output":
        used.invalid_outputs += 1
        trace.emit(
            "invalid_output",
            denial=refusal.code,
            message=refusal.message,
            budgets=used.model_dump(),
        )
        return
    used.tool_calls += 1
    used.policy_denials += 1
    state.tool_calls.append(
        ToolCallRecord(
            tool=trace.redact_text(tool),
            ok=False,
            denial=refusal.code,
            duration_ms=0.0,
            result={"summary": trace.redact_text(f"{refusal.code}: {refusal.message}")},
        )
    )
    trace.emit(
        "tool_call",
        tool=tool,
        ok=False,
        denial=refusal.code,
        message=refusal.message,
        budgets=used.model_dump(),
    )
