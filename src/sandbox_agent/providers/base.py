"""The provider boundary: where model turns come from. The controller only calls this.

A provider returns the model's raw output as text; it never validates it. A request is
one of two modes:

- ``tool_call`` (the ``tools`` strategy): the controller parses the text into a
  ``ToolCall`` (or counts it as an invalid output); its raw form is one JSON object per
  turn, ``{"tool": NAME, "args": {...}}``;
- ``text`` (the ``repair`` strategy, plain answers): no tools, no grammar; the reply is
  prose and code blocks, read by the controller (``repair.splice``).

A request may set its own sampling (temperature, seed) and reply cap; a provider that
cannot honour one (a simulated one) ignores it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.providers.errors import RetryNotice


class Exchange(BaseModel):
    """One past turn: what the model said, and what the controller answered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: str
    """The model's raw output for that turn."""
    observation: str
    """The controller's answer as JSON text (tool outcome, denial, or why output was invalid)."""


RequestMode = Literal["tool_call", "text"]
CUT_OFF_NOTE = "cut off at the reply's token limit"
"""The note a provider adds when the server stopped at the reply cap (``finish_reason:
length``, ``stop_reason: max_tokens``): the reply is incomplete, not malformed."""


class Sampling(BaseModel):
    """How one request samples: greedy at temperature 0, else seeded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    """Servers that take a seed (llama-server, vLLM, OpenAI) make a seeded sample
    repeatable; others ignore it."""


class ModelRequest(BaseModel):
    """Everything a provider may use to produce the next turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str
    task: str
    tools: list[dict[str, object]]
    """The allowed tools as ``{name, description, input_schema}``, generated from the contracts."""
    history: list[Exchange] = Field(default_factory=list)
    deadline: float | None = None
    """``time.monotonic()`` value at which the run's wall clock runs out: a real provider
    gives up on its request (and its retries) then. None: no deadline."""
    mode: RequestMode = "tool_call"
    """``text``: no tools offered, no grammar; the reply is read as prose and code."""
    sampling: Sampling | None = None
    """This request's sampling; None: the provider's own (greedy for ``local``)."""
    max_output_tokens: int | None = Field(None, ge=1, le=1_000_000)
    """This request's reply cap; None: the provider's own."""


class Usage(BaseModel):
    """Tokens and estimated cost of one model call (zero for simulated providers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class UsageAnomaly(BaseModel):
    """Usage a server reported past the request's reserved worst case (output past the
    ``max_tokens`` sent, input past the conservative estimate): impossible from an honest
    server, so it is booked at the worst case, and the reported counts are kept here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reported_input_tokens: int
    reported_output_tokens: int
    reserved_input_tokens: int
    """The input estimate the request was reserved with."""
    reserved_output_tokens: int
    """The reply cap sent with the request."""

    def note(self) -> str:
        """The anomaly as one of a reply's notes."""
        return (
            "usage reported past the request's reserved worst case "
            f"({self.reported_input_tokens} in, {self.reported_output_tokens} out; reserved "
            f"{self.reserved_input_tokens} in, {self.reserved_output_tokens} out): "
            "booked at the worst case"
        )


class ModelReply(BaseModel):
    """One turn of raw model output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    usage: Usage = Usage()
    model: str = ""
    notes: tuple[str, ...] = ()
    """What the adapter noticed without acting on it (a refusal, extra tool calls dropped)."""
    timings: dict[str, float] | None = None
    """The server's own figures for this request, when it reports them (llama-server:
    ``prompt_n``, ``prompt_ms``, ``predicted_n``, ``predicted_ms``, ``cache_n``)."""
    truncated: bool = False
    """The server stopped at the reply cap: the text is cut off (``CUT_OFF_NOTE``)."""
    usage_anomaly: UsageAnomaly | None = None
    """The server reported more than was reserved for the request: ``usage`` is what was
    booked (the worst case), this is what was reported."""


class Provider(Protocol):
    """Produces model turns. Implementations: scripted, injection, mock-adversarial, real APIs."""

    name: str

    def complete(self, request: ModelRequest) -> ModelReply:
        """Return the next turn.

        Raises:
            BudgetExhausted: a spend, call or token budget would be exceeded by this request.
            InfrastructureError: the provider could not be reached after its retries.
        """
        ...

    def close(self) -> None:
        """Release connections; the controller calls it once, when the run ends."""
        ...


@runtime_checkable
class KnowsItsContext(Protocol):
    """A provider that knows its model's context window, so the controller can keep the
    transcript within it (``controller.context``)."""

    def prompt_token_budget(self) -> int | None:
        """Tokens the prompt may take: the context window less the reply's cap; None if
        unknown."""
        ...


class Cancellation(Protocol):
    """What a provider watches of its run's ``sandbox.base.CancelToken``."""

    @property
    def cancelled(self) -> bool: ...

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once on cancellation; True if cancelled."""
        ...


@runtime_checkable
class Watchful(Protocol):
    """A provider whose requests its run can stop and hear about: the run's cancel stops
    the request in flight and every retry, and each retry is announced before its wait."""

    def watch(
        self, cancel: Cancellation, on_retry: Callable[[RetryNotice], None] | None = None
    ) -> None:
        """Watch ``cancel`` from now on; tell ``on_retry`` of each retry."""
        ...


@runtime_checkable
class KnowsItsSpend(Protocol):
    """A provider that books its requests in the spend ledger (the metered ones), so the
    run reports what the ledger holds for it, not only what answered (SR-13 F8)."""

    def spent(self) -> Usage:
        """What the ledger booked for this run's requests so far: every attempt settled,
        an answered one at its usage, one cut by the wall clock or a cancel, timed out or
        otherwise maybe billed at its worst case, one refused with a status at zero."""
        ...


@runtime_checkable
class KnowsItsPlan(Protocol):
    """A provider whose turns are known before the run (a plan), so it can say ahead how
    many whole-suite test runs they ask for. Used only to pre-start that many sandboxes;
    a wrong answer costs time or a wasted start, never a check."""

    def planned_test_runs(self) -> int:
        """Whole-suite ``run_tests`` calls among the provider's turns."""
        ...
