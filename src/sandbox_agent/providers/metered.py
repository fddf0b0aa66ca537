"""What the two real providers share: the opt-in gate, the spend meter, and the reply.

Each real provider differs only in its SDK call and in how it reads an answer; opening
the gate, pricing the model, reserving through the ledger and turning a metered answer
into a ``ModelReply`` are the same, and live here once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from sandbox_agent.ledger.prices import price_for
from sandbox_agent.ledger.store import open_ledger
from sandbox_agent.providers.base import CUT_OFF_NOTE, Cancellation, ModelReply, ProviderOptions
from sandbox_agent.providers.errors import RetryNotice
from sandbox_agent.providers.gate import GatePass, check_gate
from sandbox_agent.providers.http import DEFAULT_REQUEST_TIMEOUT_SECONDS, BoundedTransport
from sandbox_agent.providers.meter import (
    Answer,
    Failure,
    Meter,
    Metered,
    estimate_input_tokens,
    limits_from_options,
)

__all__ = ["DEFAULT_REQUEST_TIMEOUT_SECONDS", "WatchedRequests", "open_meter", "send_metered"]


class WatchedRequests:
    """``providers.base.Watchful`` for a provider with a ``Meter`` and a
    ``BoundedTransport``: the run's cancel stops the request in flight (the transport),
    ends the wait before a retry and sends no retry after it (the meter)."""

    _meter: Meter
    _transport: BoundedTransport

    def watch(
        self, cancel: Cancellation, on_retry: Callable[[RetryNotice], None] | None = None
    ) -> None:
        """Watch ``cancel`` from now on; tell ``on_retry`` of each retry before its wait."""
        self._meter.on_retry = on_retry
        self._meter.stopped = lambda: cancel.cancelled
        self._meter.sleep = cancel.wait
        self._transport.watch(cancel)


def open_meter(
    provider: Literal["anthropic", "openai"], options: ProviderOptions
) -> tuple[GatePass, Meter]:
    """Pass the opt-in gate, price the model and open its spend meter.

    Raises:
        UsageError: the gate is closed (naming what is missing), the model has no known
            price, or the ledger cannot be opened.
    """
    passed = check_gate(provider, options.model, base_url=options.base_url)
    price = price_for(
        passed.model,
        input_per_mtok=options.price_per_mtok_in,
        output_per_mtok=options.price_per_mtok_out,
    )
    meter = Meter(
        ledger=open_ledger(options.ledger_path),
        limits=limits_from_options(options),
        price=price,
        model=passed.model,
        provider=provider,
        experiment=options.experiment,
        run_id=options.run_id,
    )
    return passed, meter


def send_metered(
    meter: Meter,
    send: Callable[[], Answer],
    params: dict[str, Any],
    *,
    model: str,
    max_output_tokens: int,
    classify: Callable[[Exception], Failure | None],
    deadline: float | None = None,
) -> ModelReply:
    """Send one request through the ledger (reserve, retry, settle); the controller's view.

    Raises:
        BudgetExhausted: a reservation (first attempt or retry) would exceed a budget.
        InfrastructureError: the request failed for good; the message names no secret.
    """
    metered = meter.call(
        send,
        input_tokens=estimate_input_tokens(params),
        max_output_tokens=max_output_tokens,
        classify=classify,
        usage_of=lambda answer: answer.usage,
        deadline=deadline,
    )
    return _reply_from(metered, model)


def _reply_from(metered: Metered[Answer], model: str) -> ModelReply:
    """Raw text, usage, and what to note (retries included)."""
    answer = metered.response
    notes = answer.notes
    if metered.attempts > 1:
        notes += (f"sent {metered.attempts} times (retries)",)
    return ModelReply(
        text=answer.text,
        usage=metered.usage,
        model=answer.model or model,
        notes=notes,
        timings=answer.timings,
        truncated=CUT_OFF_NOTE in notes,
    )
