"""One metered model request: reserve the worst case, send, settle; retry with backoff.

Each attempt, retries included, is reserved in the ledger before it is sent, so a
retry storm cannot spend past a budget either. An attempt that fails with an HTTP
status is settled at zero (the APIs do not bill a refused request); one that timed
out or lost its connection is settled at its reserved worst case, since the server
may have done (and billed) the work. An attempt interrupted by a signal is left
reserved, and keeps counting until settled or expired.

An answer is settled with the usage the server reported, but never above what was
reserved for it: a count past its worst case (output past the ``max_tokens`` sent, input
past the conservative estimate) is impossible from an honest server, so the booking is
cut to the worst case, the ledger row's outcome is ``over_reported``, and the reported
counts travel with the reply (``ModelReply.usage_anomaly``) to the trace (SR-13 F4).

What a meter settled, every attempt of every request, is kept (``Meter.spent``): the run
reports it as spent, the same numbers the ledger holds for it (SR-13 F8).

A request that fails for good raises ``ProviderFailed`` with what failed
(``providers.errors.ProviderError``); each retry is announced before its wait
(``Meter.on_retry``), and a run's cancellation ends the retries (``Meter.stopped``).
"""

from __future__ import annotations

import json
import math
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from sandbox_agent.errors import InfrastructureError
from sandbox_agent.ledger.prices import Price, cost_micros
from sandbox_agent.ledger.store import (
    MICROS_PER_USD,
    Outcome,
    Reservation,
    SpendLedger,
    SpendLimits,
)
from sandbox_agent.providers.base import Usage, UsageAnomaly
from sandbox_agent.providers.errors import (
    ProviderError,
    ProviderFailed,
    RetryNotice,
    connection_error,
    http_status_error,
    refused_connection,
    unreadable_error,
)
from sandbox_agent.providers.options import MeteredOptions

DEFAULT_MAX_RETRIES = 4
"""Retries of one request after a 429, a 5xx or a timeout."""
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_CAP_SECONDS = 30.0
MAX_RETRY_AFTER_SECONDS = 60.0
"""A server's ``retry-after`` is honoured up to this; longer waits are cut to it."""
INPUT_BYTES_PER_TOKEN = 3
"""Conservative: English text and code average nearer four bytes per token."""
INPUT_OVERHEAD_TOKENS = 512
"""What the API adds around the request (tool-use preamble, chat template)."""
MAX_REPORTED_TOKENS = 1_000_000_000
"""More tokens than any model reads or writes in one request: a count above it is no count
(settled at the reserved worst case), never a number SQLite cannot store."""

T = TypeVar("T")


class Failure(NamedTuple):
    """How one failed attempt is settled and whether it is retried. ``detail`` holds no secret."""

    outcome: Outcome
    retryable: bool
    maybe_billed: bool
    retry_after: float | None
    detail: str
    error: ProviderError | None = None
    """What failed, for the trace and the result; ``detail`` as an ``other`` error when None."""

    def provider_error(self) -> ProviderError:
        """``error``, or ``detail`` as an error of kind ``other``."""
        return self.error or ProviderError(kind="other", message=self.detail)


class UnreadableAnswer(InfrastructureError):
    """Raised by ``send`` when an answer lacks the shape of the API's (the SDKs do not check)."""


class Answer(NamedTuple):
    """What a provider read from one answer: raw text for the controller, and the usage."""

    text: str
    notes: tuple[str, ...]
    usage: TokenCounts | None
    model: str
    timings: dict[str, float] | None = None
    """The server's own per-request figures, when it reports them (llama-server)."""


def read_answer(read: Callable[[], tuple[Any, ...]]) -> Answer:
    """Run ``read`` over an SDK object; a shape it lacks becomes ``UnreadableAnswer``.

    The SDKs build response objects without validating them, so a broken or hostile
    endpoint yields ``None`` where an object was expected: that is an unreadable answer,
    not a crash of the controller.
    """
    try:
        return Answer(*read())
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        raise UnreadableAnswer("the API's answer could not be read") from None


class Metered(NamedTuple, Generic[T]):
    response: T
    usage: Usage
    """What was booked: the reported usage, cut to the reserved worst case."""
    attempts: int
    anomaly: UsageAnomaly | None = None
    """The reported usage, when it was past the reserved worst case."""


class TokenCounts(NamedTuple):
    input_tokens: int
    output_tokens: int


def estimate_input_tokens(payload: object) -> int:
    """A conservative count of the input tokens of a request (its JSON bytes / 3 + overhead)."""
    size = len(json.dumps(payload, ensure_ascii=False, default=str).encode())
    return math.ceil(size / INPUT_BYTES_PER_TOKEN) + INPUT_OVERHEAD_TOKENS


def limits_from_options(options: MeteredOptions) -> SpendLimits:
    """The budgets of a run (checked when the options were made)."""
    return SpendLimits(
        max_cost_usd=options.max_cost_usd,
        experiment_budget_usd=options.experiment_budget_usd,
        max_calls=options.max_calls,
        max_tokens=options.max_tokens,
    )


@dataclass
class Meter:
    """Meters every request of one run against the shared ledger."""

    ledger: SpendLedger
    limits: SpendLimits
    price: Price
    model: str
    provider: str
    experiment: str = "default"
    run_id: str = ""
    """The run the requests count against; a fresh id when empty."""
    max_retries: int = DEFAULT_MAX_RETRIES
    sleep: Callable[[float], object] = time.sleep
    jitter: Callable[[], float] = random.random
    on_retry: Callable[[RetryNotice], None] | None = None
    """Told of each retry before its wait (the run's trace, so a user sees it)."""
    stopped: Callable[[], bool] = lambda: False
    """True once the run is cancelled: no retry is sent after that."""
    booked_micros: int = 0
    """What this meter settled in the ledger so far, every attempt of every request (a
    failed one at what it was settled at): the run's spend as the ledger holds it."""
    booked_input_tokens: int = 0
    booked_output_tokens: int = 0

    def __post_init__(self) -> None:
        self.run_id = self.run_id or uuid.uuid4().hex

    def spent(self) -> Usage:
        """What this meter booked in the ledger so far (``booked_*``), as a ``Usage``."""
        return Usage(
            input_tokens=self.booked_input_tokens,
            output_tokens=self.booked_output_tokens,
            cost_usd=self.booked_micros / MICROS_PER_USD,
        )

    def _settle(
        self,
        reservation: Reservation,
        *,
        micros: int,
        input_tokens: int,
        output_tokens: int,
        outcome: Outcome,
    ) -> None:
        """Settle ``reservation`` and add what the ledger books for it to ``booked_*``:
        cut to the reservation as ``Ledger.settle`` cuts it (input tokens first)."""
        self.ledger.settle(
            reservation,
            micros=micros,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            outcome=outcome,
        )
        booked_input = min(input_tokens, reservation.tokens)
        self.booked_micros += min(micros, reservation.micros)
        self.booked_input_tokens += booked_input
        self.booked_output_tokens += min(output_tokens, reservation.tokens - booked_input)

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before attempt ``attempt + 1``: the server's word, else exponential."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER_SECONDS)
        ceiling: float = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
        return ceiling / 2 + self.jitter() * ceiling / 2

    def call(
        self,
        send: Callable[[], T],
        *,
        input_tokens: int,
        max_output_tokens: int,
        classify: Callable[[Exception], Failure | None],
        usage_of: Callable[[T], TokenCounts | None],
        deadline: float | None = None,
    ) -> Metered[T]:
        """Send one request through the ledger, retrying what ``classify`` calls retryable.

        Args:
            send: performs the request once (the SDK with its own retries off).
            input_tokens: the conservative estimate of the request's input tokens.
            max_output_tokens: the request's output cap, as sent to the API.
            classify: maps an SDK error to a ``Failure``; None for errors that are bugs.
            usage_of: the tokens the API reported, None when it reported none.
            deadline: ``time.monotonic()`` value at which the run's wall clock runs out;
                no retry waits past it (a server's ``retry-after`` cannot hold the run).

        Raises:
            BudgetExhausted: a reservation (first attempt or retry) would exceed a budget.
            ProviderFailed: the request failed for good (an ``InfrastructureError``); its
                ``error`` says what failed, and the message names no secret.
        """
        worst = TokenCounts(input_tokens, max_output_tokens)
        worst_micros = cost_micros(self.price, *worst)
        attempt = 0
        while True:
            attempt += 1
            reservation = self.ledger.reserve(
                experiment=self.experiment,
                run_id=self.run_id,
                model=self.model,
                micros=worst_micros,
                tokens=sum(worst),
                limits=self.limits,
            )
            try:
                response = send()
            except Exception as error:
                failure = classify(error)
                if failure is None and isinstance(error, UnreadableAnswer):
                    failure = unreadable_answer()
                billed = failure is None or failure.maybe_billed
                spent = worst if billed else TokenCounts(0, 0)
                self._settle(
                    reservation,
                    micros=worst_micros if billed else 0,
                    input_tokens=spent.input_tokens,
                    output_tokens=spent.output_tokens,
                    outcome="failed" if failure is None else failure.outcome,
                )
                if failure is None:
                    raise
                self._wait_to_retry(failure, attempt, deadline)
                continue
            used = usage_of(response) or worst
            booked, anomaly = within_worst_case(used, worst)
            # Never above the reservation (cost_micros rounds up: min() keeps it exact).
            micros = min(cost_micros(self.price, *booked), worst_micros)
            self._settle(
                reservation,
                micros=micros,
                input_tokens=booked.input_tokens,
                output_tokens=booked.output_tokens,
                outcome="ok" if anomaly is None else "over_reported",
            )
            usage = Usage(
                input_tokens=booked.input_tokens,
                output_tokens=booked.output_tokens,
                cost_usd=micros / MICROS_PER_USD,
            )
            return Metered(response, usage, attempt, anomaly)

    def _wait_to_retry(self, failure: Failure, attempt: int, deadline: float | None) -> None:
        """Announce the retry of a failed attempt and wait for it; or give up.

        Raises:
            ProviderFailed: the failure is final, the retries are spent, the wait would pass
                the run's deadline, or the run was cancelled.
        """
        error = failure.provider_error()
        wait = self.backoff(attempt, failure.retry_after)
        late = deadline is not None and time.monotonic() + wait >= deadline
        if not failure.retryable or attempt > self.max_retries or late or self.stopped():
            # from None: the SDK error carries the request, headers included.
            raise ProviderFailed(self.provider, error, attempt) from None
        if self.on_retry is not None:
            self.on_retry(RetryNotice(attempt, self.max_retries, wait, error))
        self.sleep(wait)
        if self.stopped():
            raise ProviderFailed(self.provider, error, attempt) from None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``retry-after`` header (seconds form only), None when absent or unreadable."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


RETRYABLE_STATUSES = frozenset({408, 409, 429})


def status_failure(
    status: int, headers: Mapping[str, str], body: object, *, key_env: str
) -> Failure:
    """Classify an HTTP error answer: its status, the API's error type and its message
    (redacted of secrets and cut to one line: messages can echo parts of the request)."""
    error = http_status_error(status, body, key_env=key_env)
    detail = error.line()
    retry_after = parse_retry_after(headers.get("retry-after"))
    retry_after_ms = parse_retry_after(headers.get("retry-after-ms"))
    if retry_after_ms is not None:
        retry_after = retry_after_ms / 1000
    if status == 429:
        return Failure("rate_limited", True, False, retry_after, detail, error)
    if status >= 500 or status in RETRYABLE_STATUSES:
        return Failure("server_error", True, False, retry_after, detail, error)
    return Failure("refused", False, False, None, detail, error)


def transport_failure(*, timed_out: bool, cause: BaseException | None = None) -> Failure:
    """A request that got no HTTP answer: it may still have been processed and billed.

    Retried, except a refused or unresolvable connection (``refused_connection``): nothing
    listens there, and retrying would only hide that for seconds; nor is it billed.
    """
    if cause is not None:
        error = connection_error(cause, timed_out=timed_out)
    elif timed_out:
        error = ProviderError(kind="timeout", message="request timed out")
    else:
        error = ProviderError(kind="connection", message="connection failed")
    # Refused: no connection was made, so nothing was processed or billed either.
    refused = cause is not None and refused_connection(cause)
    outcome: Outcome = "timeout" if timed_out else "failed"
    return Failure(outcome, not refused, not refused, None, error.line(), error)


def unreadable_answer(seen: str | None = None) -> Failure:
    """An answer the SDK could not read: not retried, settled at the worst case."""
    error = unreadable_error(seen)
    return Failure("failed", False, True, None, error.line(), error)


def within_worst_case(
    used: TokenCounts, worst: TokenCounts
) -> tuple[TokenCounts, UsageAnomaly | None]:
    """What to book for reported usage ``used``: each count cut to its reserved worst case,
    and the anomaly when a count was past it (None when the usage is within it)."""
    booked = TokenCounts(
        min(used.input_tokens, worst.input_tokens), min(used.output_tokens, worst.output_tokens)
    )
    if booked == used:
        return booked, None
    return booked, UsageAnomaly(
        reported_input_tokens=used.input_tokens,
        reported_output_tokens=used.output_tokens,
        reserved_input_tokens=worst.input_tokens,
        reserved_output_tokens=worst.output_tokens,
    )


def token_counts(input_tokens: object, output_tokens: object) -> TokenCounts | None:
    """Reported usage, or None when a server reported something that is not two counts."""
    # type() is int, not isinstance: a JSON true is not a token count.
    if type(input_tokens) is int and type(output_tokens) is int:
        counts = (input_tokens, output_tokens)
        if all(0 <= count <= MAX_REPORTED_TOKENS for count in counts):
            return TokenCounts(input_tokens, output_tokens)
    return None
