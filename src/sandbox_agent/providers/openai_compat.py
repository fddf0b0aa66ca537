"""The ``openai`` provider: chat completions with tools, through the official SDK.

``--base-url`` points it at any OpenAI-compatible server (vLLM, Ollama, llama.cpp's
server). A past tool call is replayed as an assistant message with ``tool_calls`` and
an id, the controller's answer as a ``role: "tool"`` message with the same id. The
reply goes back to the controller as raw text: malformed arguments are passed on
as-is, for the controller to count as an invalid output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from typing_extensions import override

from sandbox_agent.providers.base import (
    CUT_OFF_NOTE,
    ModelReply,
    ModelRequest,
    Provider,
    ProviderOptions,
)
from sandbox_agent.providers.chat_protocol import (
    NATIVE,
    ToolProtocol,
    build_messages,
    protocol_params,
)
from sandbox_agent.providers.gate import KEY_ENV
from sandbox_agent.providers.http import (
    BoundedTransport,
    bounded_client,
    bounded_failure,
)
from sandbox_agent.providers.meter import (
    Answer,
    Failure,
    Meter,
    TokenCounts,
    read_answer,
    status_failure,
    token_counts,
    transport_failure,
    unreadable_answer,
)
from sandbox_agent.providers.metered import (
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    WatchedRequests,
    open_meter,
    send_metered,
)
from sandbox_agent.providers.tooldefs import raw_tool_call, tool_definitions

TIMING_FIELDS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")
"""llama-server's per-request ``timings`` kept for the trace and ``make bench``."""


def reply_text(completion: ChatCompletion, *, native: bool = True) -> tuple[str, tuple[str, ...]]:
    """The raw output for the controller, and notes on what was seen but not passed on.

    ``native``: tool calls were offered natively, so a text answer is noted as "no tool call".
    """
    if not completion.choices:
        return "", ("no choices returned",)
    choice = completion.choices[0]
    message = choice.message
    cut = (CUT_OFF_NOTE,) if choice.finish_reason == "length" else ()
    if message.refusal:
        return message.refusal, ("refusal", *cut)
    calls = [call for call in message.tool_calls or [] if call.type == "function"]
    if not calls:
        return message.content or "", (("no tool call",) if native else ()) + cut
    notes = cut + (
        (f"{len(calls)} tool calls returned; only the first was kept",) if len(calls) > 1 else ()
    )
    first = calls[0].function
    try:
        args = json.loads(first.arguments)
    except ValueError:
        return first.arguments, (*notes, "tool arguments are not JSON; passed on as-is")
    if not isinstance(args, dict):
        return first.arguments, (*notes, "tool arguments are not an object; passed on as-is")
    return raw_tool_call(first.name, args), notes


def classify(error: Exception) -> Failure | None:
    """An SDK error as a ledger ``Failure``; None for anything that is not an API error."""
    if isinstance(error, openai.APIStatusError):
        headers = dict(error.response.headers)
        return status_failure(error.status_code, headers, error.body, key_env=KEY_ENV["openai"])
    if isinstance(error, openai.APIConnectionError):
        return transport_failure(timed_out=isinstance(error, openai.APITimeoutError), cause=error)
    if isinstance(error, openai.APIError):
        return unreadable_answer()
    return None


def default_classify(error: Exception) -> Failure | None:
    """This client's bounds first, then the SDK's errors."""
    return bounded_failure(error) or classify(error)


def usage_of(completion: ChatCompletion) -> TokenCounts | None:
    """The tokens the server reported; None (settled at the reserved worst case) without them."""
    if completion.usage is None:
        return None
    return token_counts(completion.usage.prompt_tokens, completion.usage.completion_tokens)


def server_timings(completion: ChatCompletion) -> dict[str, float] | None:
    """llama-server's ``timings`` (prompt and generated tokens and times, cache reuse), if any."""
    extra = completion.model_extra or {}
    timings = extra.get("timings")
    if not isinstance(timings, dict):
        return None
    kept = {
        name: float(timings[name])
        for name in TIMING_FIELDS
        if type(timings.get(name)) in (int, float)
    }
    return kept or None


def read(completion: ChatCompletion, *, native: bool = True) -> Answer:
    """Everything the provider needs from one answer, or ``UnreadableAnswer``."""
    return read_answer(
        lambda: (
            *reply_text(completion, native=native),
            usage_of(completion),
            str(completion.model or ""),
            server_timings(completion),
        )
    )


class OpenAICompatProvider(WatchedRequests, Provider):
    """Model turns from a chat completions endpoint, each request metered through the ledger."""

    name = "openai"

    def __init__(
        self,
        *,
        client: openai.OpenAI,
        transport: BoundedTransport | None = None,
        model: str,
        meter: Meter,
        max_output_tokens: int,
        official: bool,
        protocol: ToolProtocol | None = None,
        sampling: dict[str, Any] | None = None,
        classify: Callable[[Exception], Failure | None] | None = None,
    ) -> None:
        self._client = client
        self._transport = transport or BoundedTransport()
        self._model = model
        self._meter = meter
        self._max_output_tokens = max_output_tokens
        self._official = official
        self._protocol: ToolProtocol = protocol or ("required" if official else "tools")
        self._sampling = dict(sampling or {})
        self._classify = classify or default_classify

    @override
    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()

    @override
    def complete(self, request: ModelRequest) -> ModelReply:
        """Return the next turn: the first tool call as raw text, or the text answer as-is.

        Raises:
            BudgetExhausted: a spend, call or token budget would be exceeded by this request.
            InfrastructureError: the API could not be reached or refused, after retries.
        """
        text_mode = request.mode == "text"
        tools = [] if text_mode else (request.tools or tool_definitions())
        native = self._protocol in NATIVE and not text_mode
        sampling = dict(self._sampling)
        if request.sampling is not None:
            sampling = request.sampling.model_dump(exclude_none=True)
        params: dict[str, Any] = {
            "model": self._model,
            "messages": build_messages(request, "text" if text_mode else self._protocol, tools),
            "stream": False,
            **({} if text_mode else protocol_params(self._protocol, tools)),
            **sampling,
        }
        cap = request.max_output_tokens or self._max_output_tokens
        if self._official:
            params["max_completion_tokens"] = cap
            if not text_mode:
                params["parallel_tool_calls"] = False
        else:
            # Local servers differ in what they accept: only the oldest, widest-known fields.
            params["max_tokens"] = cap
        self._transport.run_deadline = request.deadline
        return send_metered(
            self._meter,
            lambda: read(self._client.chat.completions.create(**params), native=native),
            params,
            model=self._model,
            max_output_tokens=cap,
            classify=lambda error: bounded_failure(error, self._transport) or self._classify(error),
            deadline=request.deadline,
        )


def create(options: ProviderOptions) -> Provider:
    """The ``openai`` provider, behind the opt-in gate.

    Raises:
        UsageError: the gate is closed (naming what is missing), the model has no known
            price, or the ledger cannot be opened.
    """
    passed, meter = open_meter("openai", options)
    timeout_s = options.request_timeout_seconds or DEFAULT_REQUEST_TIMEOUT_SECONDS
    transport = BoundedTransport(total_seconds=timeout_s)
    client = openai.OpenAI(
        api_key=passed.api_key,
        http_client=bounded_client(transport),
        base_url=options.base_url,
        max_retries=0,
        timeout=timeout_s,
    )
    if options.base_url is not None:
        # The SDK reads OPENAI_ORG_ID and OPENAI_PROJECT_ID from the environment and sends
        # them as headers: the operator's account ids are no business of another server.
        client.organization = None
        client.project = None
    return OpenAICompatProvider(
        client=client,
        transport=transport,
        model=passed.model,
        meter=meter,
        max_output_tokens=options.max_output_tokens,
        official=options.base_url is None,
        protocol=options.tool_protocol,
    )
