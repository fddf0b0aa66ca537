"""The two steps a controller-led strategy is made of: one model call and one tool call,
each within the run's budgets, counted and recorded exactly as the tools loop records
the model's own (``controller.loop``). Used by ``controller.repair_loop``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sandbox_agent.controller import records
from sandbox_agent.controller.loop_common import (
    MAX_REPLY_CHARS_IN_TRACE,
    LoopState,
    LoopStop,
    _cancelled_after_reply,
    _context_fitter,
    _fit,
    _provider_failed,
    check_budgets,
)
from sandbox_agent.controller.models import RunConfig
from sandbox_agent.controller.parse import denial_kind
from sandbox_agent.errors import BudgetExhausted, InfrastructureError
from sandbox_agent.providers.base import ModelReply, ModelRequest, Provider
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.tools.contracts import ToolArgs, ToolCall, ToolName, ToolOutcome
from sandbox_agent.tools.toolbox import ToolBox
from sandbox_agent.trace import TraceWriter, summarise_exception


@dataclass
class Steps:
    """What a controller-led strategy acts through: the run's provider, tool box, trace,
    state and cancel token."""

    config: RunConfig
    provider: Provider
    toolbox: ToolBox
    trace: TraceWriter
    state: LoopState
    cancel: CancelToken
    fitter: object | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.fitter = _context_fitter(self.provider)

    @property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.config.allowed_tools)

    def budget_stop(self) -> LoopStop | None:
        """The run's budgets, checked before each model call (``loop.check_budgets``)."""
        return check_budgets(self.config, self.state, self.cancel)

    def complete(self, request: ModelRequest) -> ModelReply | LoopStop:
        """One model call: fitted to the context, metered, recorded as a ``model_turn``;
        a reply that arrives after a cancel is recorded and never acted on."""
        from sandbox_agent.controller.context import ContextFitter

        fitter = self.fitter if isinstance(self.fitter, ContextFitter) else None
        if fitter is not None:
            request = _fit(fitter, request, self.trace)
        began = time.monotonic()
        try:
            reply = self.provider.complete(request)
        except BudgetExhausted as error:
            return LoopStop("budget_exhausted", str(error))
        except InfrastructureError as error:
            return _provider_failed(error, self.config, self.state, self.trace, self.cancel)
        if fitter is not None:
            fitter.observe(request, reply.usage.input_tokens)
        used = self.state.used
        used.iterations += 1
        used.input_tokens += reply.usage.input_tokens
        used.output_tokens += reply.usage.output_tokens
        used.cost_usd += reply.usage.cost_usd
        self.state.model = reply.model or self.state.model
        sampling = request.sampling
        self.trace.emit(
            "model_turn",
            iteration=used.iterations,
            reply=self.trace.redact_text(reply.text)[:MAX_REPLY_CHARS_IN_TRACE],
            reply_chars=len(reply.text),
            duration_ms=round((time.monotonic() - began) * 1000, 3),
            usage=reply.usage.model_dump(),
            notes=list(reply.notes),
            budgets=used.model_dump(),
            mode=request.mode,
            truncated=reply.truncated,
            **({"sampling": sampling.model_dump()} if sampling is not None else {}),
            **({"timings": reply.timings} if reply.timings else {}),
        )
        if (stop := _cancelled_after_reply(self.cancel)) is not None:
            return stop
        return reply

    def tool(self, tool: ToolName, args: ToolArgs) -> ToolOutcome | LoopStop:
        """One tool call made by the controller, counted and recorded as the model's are
        (``by: "controller"`` in the trace); none after a cancel."""
        if self.cancel.cancelled:
            return LoopStop("cancelled", "cancelled from outside")
        call = ToolCall(tool=tool, args=args)
        used = self.state.used
        used.tool_calls += 1
        try:
            outcome = self.toolbox.execute(call)
        except InfrastructureError as error:
            self.trace.emit("tool_error", tool=tool, error=summarise_exception(error))
            return LoopStop("sandbox_error", f"{tool} failed on our side: {error}"[:300])
        if outcome.denial is not None and denial_kind(outcome.denial) == "policy":
            used.policy_denials += 1
        record = records.tool_call_record(outcome, redact=self.trace.redact_text)
        self.state.tool_calls.append(record)
        self.trace.emit(
            "tool_call",
            tool=tool,
            arguments=records.arguments_for_trace(args),
            ok=outcome.ok,
            denial=outcome.denial,
            outcome=record.result,
            duration_ms=record.duration_ms,
            budgets=used.model_dump(),
            by="controller",
        )
        return outcome

    def invalid(self, code: str, message: str) -> None:
        """A model reply that could not be used, counted as an invalid output."""
        self.state.used.invalid_outputs += 1
        self.trace.emit(
            "invalid_output", denial=code, message=message, budgets=self.state.used.model_dump()
        )
