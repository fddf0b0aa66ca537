"""What the two real providers share: the opt-in gate, the spend meter, the bounded
transport, the lifecycle and the reply.

Each real provider differs only in its SDK call and in how it reads an answer; opening
the gate, pricing the model, bounding and watching the transport, reserving through the
ledger and turning a metered answer into a ``ModelReply`` are the same, and live here
once (``MeteredProvider``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple

from sandbox_agent.ledger.opening import open_ledger
from sandbox_agent.ledger.prices import Price, price_for
from sandbox_agent.providers.base import (
    CUT_OFF_NOTE,
    Cancellation,
    ModelReply,
    ModelRequest,
    Usage,
)
from sandbox_agent.providers.errors import RetryNotice
from sandbox_agent.providers.gate import GatePass, check_gate
from sandbox_agent.providers.http import BoundedTransport, bounded_client, bounded_failure
from sandbox_agent.providers.meter import (
    Answer,
    Failure,
    Meter,
    Metered,
    estimate_input_tokens,
    limits_from_options,
)
from sandbox_agent.providers.options import HostedOptions, MeteredOptions

__all__ = [
    "MeteredProvider",
    "SdkErrors",
    "Transport",
    "classify_sdk_error",
    "meter_for",
    "open_client",
    "open_meter",
    "sdk_client",
    "send_metered",
    "transport_for",
]


class Transport(NamedTuple):
    """The bounded transport of one provider's SDK client, and its request time-out."""

    transport: BoundedTransport
    http_client: Any
    timeout_s: float


def transport_for(options: MeteredOptions) -> Transport:
    """A bounded transport and its client for ``--request-timeout`` (else the kind's default)."""
    timeout_s = options.request_timeout_seconds
    transport = BoundedTransport(total_seconds=timeout_s)
    return Transport(transport, bounded_client(transport), timeout_s)


class SdkErrors(NamedTuple):
    """One official SDK's exception classes (the openai and anthropic SDKs share names)."""

    status: type[Exception]
    connection: type[Exception]
    timeout: type[Exception]
    api: type[Exception]


def classify_sdk_error(error: Exception, errors: SdkErrors, key_env: str) -> Failure | None:
    """An SDK error as a ledger ``Failure``; None for anything that is not an API error."""
    from sandbox_agent.providers.meter import status_failure, transport_failure, unreadable_answer

    if isinstance(error, errors.status):
        response = getattr(error, "response", None)
        headers = dict(response.headers) if response is not None else {}
        status = int(getattr(error, "status_code", 0))
        return status_failure(status, headers, getattr(error, "body", None), key_env=key_env)
    if isinstance(error, errors.connection):
        return transport_failure(timed_out=isinstance(error, errors.timeout), cause=error)
    if isinstance(error, errors.api):
        return unreadable_answer()
    return None


def sdk_client(
    sdk: Callable[..., Any], *, api_key: str, base_url: str | None, bounded: Transport
) -> Any:
    """An official SDK's client on the bounded transport, with no retries of its own (the
    meter retries, through the ledger)."""
    return sdk(
        api_key=api_key,
        http_client=bounded.http_client,
        base_url=base_url,
        max_retries=0,
        timeout=bounded.timeout_s,
    )


def open_client(
    provider: Literal["anthropic", "openai"], options: HostedOptions, sdk: Callable[..., Any]
) -> dict[str, Any]:
    """A hosted provider past its gate: its meter, bounded transport and SDK client, as
    the arguments of its ``MeteredProvider``.

    Raises:
        UsageError: the gate is closed (naming what is missing), the model has no known
            price, or the ledger cannot be opened.
    """
    passed, meter = open_meter(provider, options)
    bounded = transport_for(options)
    return {
        "client": sdk_client(
            sdk, api_key=passed.api_key, base_url=options.base_url, bounded=bounded
        ),
        "transport": bounded.transport,
        "model": passed.model,
        "meter": meter,
        "max_output_tokens": options.max_output_tokens,
    }


class MeteredProvider:
    """What a real provider holds and does the same way: its SDK client on a bounded
    transport, its spend meter and reply cap; one request made, sent through the ledger
    and read, its errors classified; the run's cancel watched
    (``providers.base.Watchful``: it stops the request in flight, ends the wait before a
    retry and sends no retry after it). A provider says only how its API takes a request
    (``_params``), how it is sent and read (``_answer``), and its SDK's errors."""

    name: str
    sdk_errors: ClassVar[SdkErrors]
    key_env: ClassVar[str]
    """Where the provider's key is read from, named by a 401 or 403."""

    def __init__(
        self,
        *,
        client: Any,
        transport: BoundedTransport | None = None,
        model: str,
        meter: Meter,
        max_output_tokens: int,
    ) -> None:
        self._client = client
        self._transport = transport or BoundedTransport()
        self._model = model
        self._meter = meter
        self._max_output_tokens = max_output_tokens

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()

    def spent(self) -> Usage:
        """What the ledger booked for this run's requests so far (``KnowsItsSpend``)."""
        return self._meter.spent()

    def complete(self, request: ModelRequest) -> ModelReply:
        """Return the next turn: the first tool call as raw text, or the text answer
        as-is; one request through the ledger, bounded by the run's deadline.

        Raises:
            BudgetExhausted: a spend, call or token budget would be exceeded by this request.
            InfrastructureError: the API could not be reached or refused, after retries.
        """
        from sandbox_agent.providers.tooldefs import tool_definitions

        tools = [] if request.mode == "text" else (request.tools or tool_definitions())
        cap = request.max_output_tokens or self._max_output_tokens
        params = self._params(request, tools, cap)
        self._transport.run_deadline = request.deadline
        return send_metered(
            self._meter,
            lambda: self._answer(params, request),
            params,
            model=self._model,
            max_output_tokens=cap,
            classify=lambda error: (
                bounded_failure(error, self._transport) or self.sdk_failure(error)
            ),
            deadline=request.deadline,
        )

    def _params(
        self, request: ModelRequest, tools: list[dict[str, object]], cap: int
    ) -> dict[str, Any]:
        """The API's arguments for ``request``: the transcript and the tools offered (none
        in ``text`` mode) in its own form, and the reply cap."""
        raise NotImplementedError

    def _answer(self, params: dict[str, Any], request: ModelRequest) -> Answer:
        """Send ``params`` with the SDK and read the answer, or ``UnreadableAnswer``."""
        raise NotImplementedError

    def sdk_failure(self, error: Exception) -> Failure | None:
        """An SDK error as a ledger ``Failure``; None for anything that is not an API error."""
        return classify_sdk_error(error, self.sdk_errors, self.key_env)

    def watch(
        self, cancel: Cancellation, on_retry: Callable[[RetryNotice], None] | None = None
    ) -> None:
        """Watch ``cancel`` from now on; tell ``on_retry`` of each retry before its wait."""
        self._meter.on_retry = on_retry
        self._meter.stopped = lambda: cancel.cancelled
        self._meter.sleep = cancel.wait
        self._transport.watch(cancel)


def open_meter(
    provider: Literal["anthropic", "openai"], options: HostedOptions
) -> tuple[GatePass, Meter]:
    """Pass the opt-in gate, price the model and open its spend meter.

    Raises:
        UsageError: the gate is closed (naming what is missing), the model has no known
            price, or the ledger cannot be opened.
    """
    passed = check_gate(
        provider,
        options.model,
        base_url=options.base_url,
        prices=(options.price_per_mtok_in, options.price_per_mtok_out),
    )
    price = price_for(
        passed.model,
        input_per_mtok=options.price_per_mtok_in,
        output_per_mtok=options.price_per_mtok_out,
    )
    return passed, meter_for(options, provider=provider, model=passed.model, price=price)


def meter_for(options: MeteredOptions, *, provider: str, model: str, price: Price) -> Meter:
    """The spend meter of one run: its ledger, limits, experiment and run, at ``price``.

    Raises:
        UsageError: the ledger cannot be opened.
    """
    return Meter(
        ledger=open_ledger(options.ledger_path),
        limits=limits_from_options(options),
        price=price,
        model=model,
        provider=provider,
        experiment=options.experiment,
        run_id=options.run_id,
    )


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
    if metered.anomaly is not None:
        notes += (metered.anomaly.note(),)
    return ModelReply(
        text=answer.text,
        usage=metered.usage,
        model=answer.model or model,
        notes=notes,
        timings=answer.timings,
        truncated=CUT_OFF_NOTE in notes,
        usage_anomaly=metered.anomaly,
    )
