"""What the strategies' loops share (``controller.loop``'s ``tools`` loop, the
``repair`` strategy's steps): the run's counters and records, the one budget check made
before each model call, and the steps around a model call (context fitting, a provider
failure, a reply that came after a cancel, a refused turn)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox_agent.controller.context import ContextFitter
from sandbox_agent.controller.models import BudgetUsed, CandidateRecord, RunConfig, ToolCallRecord
from sandbox_agent.controller.parse import denial_kind
from sandbox_agent.controller.status import LoopEnd
from sandbox_agent.errors import InfrastructureError, ModelServerGone, ToolDenied
from sandbox_agent.providers.base import Exchange, KnowsItsContext, ModelRequest, Provider
from sandbox_agent.providers.errors import ProviderError, describe
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.trace import TraceWriter, summarise_exception

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
    untried: bool = False
    """The loop ended before it tried anything (the ``repair`` strategy found no function
    to repair): ``reason`` then follows the final tests' in the status reason, which
    would otherwise not say why nothing was tried."""


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
