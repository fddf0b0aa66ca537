"""What each kind of provider is given: one options model per kind, one union of them.

A provider's options hold only the fields that kind uses, each limit a Pydantic
constraint with a named default, so a value out of range is refused where the options
are made (a CLI flag, a service request, an evaluation, a cluster payload), never later
in the provider that reads it. The union is discriminated by ``kind``:

- ``plan``: ``scripted`` and ``mock-adversarial`` (and plan-replaying test doubles):
  the plan to replay;
- ``injection``: nothing;
- ``local``: the spend meter's limits, the request's time-out and reply cap, the tool
  protocol (the model and the server are the project's own);
- ``anthropic``, ``openai``: the meter's limits too, and the model, the endpoint and
  the prices; ``openai`` also the tool protocol.

Which kind a provider name takes is the registry's (``providers.options_for``).
Options are changed only through ``updated``, which validates again: never
``model_copy``, which does not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

ToolProtocol = Literal["tools", "required", "json_schema", "text"]
"""How a tool call is asked for (``providers.chat_protocol``)."""

DEFAULT_EXPERIMENT = "default"
DEFAULT_MAX_COST_USD = 1.00
"""``--max-cost-usd``: estimated spend of one run."""
DEFAULT_EXPERIMENT_BUDGET_USD = 10.00
"""``--experiment-budget-usd``: estimated spend of all runs of one experiment."""
MAX_SPEND_USD = 1_000_000.0
"""The largest spend cap a run or an experiment may be given."""
DEFAULT_MAX_CALLS = 60
"""``--max-calls``: requests per run, retries included."""
MAX_CALLS = 1_000_000
DEFAULT_MAX_TOKENS = 2_000_000
"""``--max-tokens``: input plus output tokens per run."""
MAX_TOKENS = 10**12
DEFAULT_MAX_OUTPUT_TOKENS = 2048
"""The reply cap of one model turn of a hosted model."""
LOCAL_MAX_OUTPUT_TOKENS = 1024
"""The local model's reply cap: a tool call is a few dozen tokens; an ``apply_patch``
that rewrites a 20-line function, JSON-escaped, 400-700 (512 cut such replies off); the
repair candidates and the one-shot get 1024 too."""
MAX_OUTPUT_TOKENS = 1_000_000
DEFAULT_REQUEST_TIMEOUT_SECONDS = 120.0
"""``--request-timeout`` of a hosted model: one HTTP request, in total; a time-out is
retried (and reserved) like a 5xx."""
LOCAL_REQUEST_TIMEOUT_SECONDS = 300.0
"""``--request-timeout`` of the local model: a first turn of a long prompt on 2 cores
takes tens of seconds."""
MAX_REQUEST_TIMEOUT_SECONDS = 3600.0
LOCAL_TOOL_PROTOCOL: ToolProtocol = "json_schema"
"""Measured best with the local model (docs/MODELS.md, "Which protocol")."""
MAX_PRICE_PER_MTOK = 10_000.0
"""USD per million tokens: far above any model's price."""
MAX_NAME_CHARS = 200


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def updated(self, **fields: Any) -> Self:
        """These options with those of ``fields`` this kind has, validated again; the
        others are not this kind's and are left out (a plan for a real model, a ledger
        for a simulated one).

        Raises:
            TypeError: a field no kind of options has (a mistake in the caller).
            pydantic.ValidationError: a value out of its range.
        """
        unknown_fields(fields)
        mine = {name: value for name, value in fields.items() if name in type(self).model_fields}
        return self.model_validate({**self.model_dump(), **mine})


class PlanOptions(_Options):
    """``scripted``, ``mock-adversarial``: the plan to replay."""

    kind: Literal["plan"] = "plan"
    plan_path: str | None = None
    """The plan file given with ``--plan``."""
    reference_plan_path: str | None = None
    """The fixture's own reference plan (kept outside its repository folder), if any;
    replayed when no plan is given."""


class InjectionOptions(_Options):
    """``injection``: the simulated compromised model needs nothing."""

    kind: Literal["injection"] = "injection"


class MeteredOptions(_Options):
    """What every provider metered through the spend ledger is given (not a kind itself)."""

    run_id: str = ""
    """The run the requests count against; a fresh id when empty."""
    ledger_path: str | None = None
    """``--ledger``; None: the state folder's, or the cluster's ledger actor."""
    experiment: str = Field(DEFAULT_EXPERIMENT, min_length=1, max_length=MAX_NAME_CHARS)
    max_cost_usd: float = Field(DEFAULT_MAX_COST_USD, ge=0, le=MAX_SPEND_USD, allow_inf_nan=False)
    experiment_budget_usd: float = Field(
        DEFAULT_EXPERIMENT_BUDGET_USD, ge=0, le=MAX_SPEND_USD, allow_inf_nan=False
    )
    max_calls: int = Field(DEFAULT_MAX_CALLS, ge=1, le=MAX_CALLS)
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=1, le=MAX_TOKENS)
    max_output_tokens: int = Field(DEFAULT_MAX_OUTPUT_TOKENS, ge=1, le=MAX_OUTPUT_TOKENS)
    """The reply cap of one model turn (a request may set its own)."""
    request_timeout_seconds: float = Field(
        DEFAULT_REQUEST_TIMEOUT_SECONDS, gt=0, le=MAX_REQUEST_TIMEOUT_SECONDS
    )
    """One HTTP request's whole time (``--request-timeout``): a model on a busy CPU needs
    more; a request cut at its time-out is retried from the start."""


class LocalOptions(MeteredOptions):
    """``local``: the project's own server and model (no price, no key, no endpoint)."""

    kind: Literal["local"] = "local"
    max_output_tokens: int = Field(LOCAL_MAX_OUTPUT_TOKENS, ge=1, le=MAX_OUTPUT_TOKENS)
    request_timeout_seconds: float = Field(
        LOCAL_REQUEST_TIMEOUT_SECONDS, gt=0, le=MAX_REQUEST_TIMEOUT_SECONDS
    )
    tool_protocol: ToolProtocol = LOCAL_TOOL_PROTOCOL


class HostedOptions(MeteredOptions):
    """What a hosted model's API adds (not a kind itself): the model, the endpoint and
    the prices."""

    model: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    """``--model``; None is refused by the opt-in gate, naming ``--model``."""
    base_url: str | None = Field(None, pattern=r"^https?://\S+$", max_length=2000)
    """Another endpoint (vLLM, Ollama, llama.cpp, ...); None: the official API."""
    price_per_mtok_in: float | None = Field(None, ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)
    """None: the dated price table's."""
    price_per_mtok_out: float | None = Field(None, ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)


class AnthropicOptions(HostedOptions):
    """``anthropic``: the Messages API."""

    kind: Literal["anthropic"] = "anthropic"


class OpenAIOptions(HostedOptions):
    """``openai``: chat completions, the official API or any OpenAI-compatible server."""

    kind: Literal["openai"] = "openai"
    tool_protocol: ToolProtocol | None = None
    """None: ``required`` for the official API, ``tools`` for another server."""


ProviderOptions: TypeAlias = Annotated[
    PlanOptions | InjectionOptions | LocalOptions | AnthropicOptions | OpenAIOptions,
    Field(discriminator="kind"),
]
"""Any provider's options: the variant of its kind."""
AnyOptions: TypeAlias = (
    PlanOptions | InjectionOptions | LocalOptions | AnthropicOptions | OpenAIOptions
)
"""The same union, for annotations that need no discriminator (a function's argument)."""
VARIANTS: tuple[type[_Options], ...] = (
    PlanOptions,
    InjectionOptions,
    LocalOptions,
    AnthropicOptions,
    OpenAIOptions,
)


def unknown_fields(fields: dict[str, Any]) -> None:
    """Refuse a field no kind of options has: a mistake in the caller, not the user's.

    Raises:
        TypeError: naming the field.
    """
    for name in fields:
        if not any(name in variant.model_fields for variant in VARIANTS) or name == "kind":
            raise TypeError(f"no provider options have a field {name!r}")


def check_fields(fields: dict[str, Any]) -> None:
    """Check each of ``fields`` against its constraint, whatever kind will use it: a value
    out of range is refused even where the chosen provider would not read it.

    Raises:
        TypeError: a field no kind has.
        pydantic.ValidationError: a value out of its range (the field named in ``loc``).
    """
    unknown_fields(fields)
    for name, value in fields.items():
        variant = next(v for v in VARIANTS if name in v.model_fields)
        variant.model_validate({name: value})
