"""What a strategy acts through, so that every model call and tool call is within the
run's budgets, counted and recorded the same way: ``Steps`` (one model call, one tool
call, the record of a call), and ``Strategy``, which makes a strategy's entry point
(the signature ``run.py`` calls) from a function of its ``Steps``. Used by both loops
(``controller.loop``'s ``tools``, ``controller.repair_loop``'s ``repair``)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox_agent.controller import records
from sandbox_agent.controller.context import ContextFitter
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
from sandbox_agent.controller.models import RunConfig, ToolCallRecord
from sandbox_agent.controller.parse import denial_kind
from sandbox_agent.errors import BudgetExhausted, InfrastructureError
from sandbox_agent.providers.base import (
    CUT_OFF_NOTE,
    KnowsItsSpend,
    ModelReply,
    ModelRequest,
    Provider,
)
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.tools.contracts import ToolArgs, ToolCall, ToolName, ToolOutcome
from sandbox_agent.trace import TraceWriter, summarise_exception

if TYPE_CHECKING:
    from sandbox_agent.tools.toolbox import ToolBox


@dataclass
class Steps:
    """What a strategy acts through: the run's provider, tool box, trace, state and
    cancel token."""

    config: RunConfig
    provider: Provider
    toolbox: ToolBox
    trace: TraceWriter
    state: LoopState
    cancel: CancelToken
    fitter: ContextFitter | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.fitter = _context_fitter(self.provider)

    @property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.config.allowed_tools)

    def budget_stop(self) -> LoopStop | None:
        """The run's budgets, checked before each model call (``loop.check_budgets``)."""
        return check_budgets(self.config, self.state, self.cancel)

    def complete(self, request: ModelRequest) -> ModelReply | LoopStop:
        """One model call: fitted to the context, metered, recorded as a ``model_turn``
        (with its ``mode`` when it is not ``tool_call``: ``repair``'s); a reply that
        arrives after a cancel is recorded and never acted on."""
        fitter, trace = self.fitter, self.trace
        if fitter is not None:
            request = _fit(fitter, request, trace)
        began = time.monotonic()
        try:
            reply = self.provider.complete(request)
        except BudgetExhausted as error:
            self._count_spend(None)
            return LoopStop("budget_exhausted", str(error))
        except InfrastructureError as error:
            self._count_spend(None)
            return _provider_failed(error, self.config, self.state, trace, self.cancel)
        if fitter is not None:
            fitter.observe(request, reply.usage.input_tokens)
        used = self.state.used
        used.iterations += 1
        self._count_spend(reply)
        self.state.model = reply.model or self.state.model
        # Before its turn: the turn and its call stay next to each other (viewer, progress).
        if (anomaly := reply.usage_anomaly) is not None:
            trace.emit(
                "usage_anomaly",
                iteration=used.iterations,
                reported={
                    "input_tokens": anomaly.reported_input_tokens,
                    "output_tokens": anomaly.reported_output_tokens,
                },
                reserved={
                    "input_tokens": anomaly.reserved_input_tokens,
                    "output_tokens": anomaly.reserved_output_tokens,
                },
                booked=reply.usage.model_dump(),
            )
        sampling = request.sampling
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
            **({"mode": request.mode} if request.mode != "tool_call" else {}),
            truncated=reply.truncated or CUT_OFF_NOTE in reply.notes,
            **({"sampling": sampling.model_dump()} if sampling is not None else {}),
            **({"timings": reply.timings} if reply.timings else {}),
        )
        if (stop := _cancelled_after_reply(self.cancel)) is not None:
            return stop
        return reply

    def _count_spend(self, reply: ModelReply | None) -> None:
        """The run's tokens and cost after a model call: what the spend ledger booked for
        the run so far, for a provider that books there (a request cut by the wall clock
        or a cancel, or an attempt retried after a time-out, counts at the worst case it
        was settled at: SR-13 F8); else the reply's usage added."""
        used = self.state.used
        if isinstance(self.provider, KnowsItsSpend):
            spent = self.provider.spent()
            used.input_tokens = spent.input_tokens
            used.output_tokens = spent.output_tokens
            used.cost_usd = spent.cost_usd
        elif reply is not None:
            used.input_tokens += reply.usage.input_tokens
            used.output_tokens += reply.usage.output_tokens
            used.cost_usd += reply.usage.cost_usd

    def tool(self, tool: ToolName, args: ToolArgs) -> ToolOutcome | LoopStop:
        """One tool call made by the controller, counted and recorded as the model's are
        (``by: "controller"`` in the trace); none after a cancel."""
        if self.cancel.cancelled:
            return LoopStop("cancelled", "cancelled from outside")
        call = ToolCall(tool=tool, args=args)
        self.state.used.tool_calls += 1
        outcome = self.execute(call)
        if isinstance(outcome, LoopStop):
            return outcome
        self.record(
            call, records.tool_call_record(outcome, redact=self.trace.redact_text), by="controller"
        )
        return outcome

    def execute(self, call: ToolCall) -> ToolOutcome | LoopStop:
        """Run one call through the tool box (not counted, not recorded: ``record``); a
        failure on our side ends the run ``sandbox_error``."""
        try:
            return self.toolbox.execute(call)
        except InfrastructureError as error:
            self.trace.emit("tool_error", tool=call.tool, error=summarise_exception(error))
            return LoopStop("sandbox_error", f"{call.tool} failed on our side: {error}"[:300])

    def record(self, call: ToolCall, record: ToolCallRecord, **extra: Any) -> None:
        """Count a call's policy denial, keep its record and trace it as a ``tool_call``
        (``extra``: fields of the event only)."""
        used = self.state.used
        if record.denial is not None and denial_kind(record.denial) == "policy":
            used.policy_denials += 1
        self.state.tool_calls.append(record)
        self.trace.emit(
            "tool_call",
            tool=call.tool,
            arguments=records.arguments_for_trace(call.args),
            ok=record.ok,
            denial=record.denial,
            outcome=record.result,
            duration_ms=record.duration_ms,
            budgets=used.model_dump(),
            **extra,
        )

    def invalid(self, code: str, message: str) -> None:
        """A model reply that could not be used, counted as an invalid output."""
        self.state.used.invalid_outputs += 1
        self.trace.emit(
            "invalid_output", denial=code, message=message, budgets=self.state.used.model_dump()
        )


class Strategy:
    """A strategy's entry point, as ``run.py`` (``STRATEGY_LOOPS``) calls it, made from
    its body: a function of the ``Steps`` it acts through (``@Strategy`` on it)."""

    def __init__(self, body: Callable[[Steps], LoopStop]) -> None:
        self.body = body
        functools.update_wrapper(self, body)

    def __call__(
        self,
        config: RunConfig,
        *,
        provider: Provider,
        toolbox: ToolBox,
        trace: TraceWriter,
        state: LoopState,
        cancel: CancelToken,
    ) -> LoopStop:
        return self.body(Steps(config, provider, toolbox, trace, state, cancel))
