"""The ``openai`` provider: chat completions with tools, through the official SDK.

``--base-url`` points it at any OpenAI-compatible server (vLLM, Ollama, llama.cpp's
server). A past tool call is replayed as an assistant message with ``tool_calls`` and
an id, the controller's answer as a ``role: "tool"`` message with the same id. The
reply goes back to the controller as raw text: malformed arguments are passed on
as-is, for the controller to count as an invalid output.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from typing_extensions import override

from sandbox_agent.providers.base import CUT_OFF_NOTE, ModelRequest, Provider
from sandbox_agent.providers.chat_protocol import NATIVE, build_messages, protocol_params
from sandbox_agent.providers.gate import KEY_ENV
from sandbox_agent.providers.http import BoundedTransport
from sandbox_agent.providers.meter import Answer, Meter, TokenCounts, read_answer, token_counts
from sandbox_agent.providers.metered import MeteredProvider, SdkErrors, open_client
from sandbox_agent.providers.options import OpenAIOptions, ToolProtocol
from sandbox_agent.providers.tooldefs import raw_tool_call

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
    except (ValueError, RecursionError):  # nested past the parser's limit
        return first.arguments, (*notes, "tool arguments are not JSON; passed on as-is")
    if not isinstance(args, dict):
        return first.arguments, (*notes, "tool arguments are not an object; passed on as-is")
    return raw_tool_call(first.name, args), notes


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


class OpenAICompatProvider(MeteredProvider, Provider):
    """Model turns from a chat completions endpoint, each request metered through the ledger."""

    name = "openai"
    sdk_errors = SdkErrors(
        openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError, openai.APIError
    )
    key_env = KEY_ENV["openai"]

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
    ) -> None:
        super().__init__(
            client=client,
            transport=transport,
            model=model,
            meter=meter,
            max_output_tokens=max_output_tokens,
        )
        self._official = official
        self._protocol: ToolProtocol = protocol or ("required" if official else "tools")
        self._sampling = dict(sampling or {})

    @override
    def _params(
        self, request: ModelRequest, tools: list[dict[str, object]], cap: int
    ) -> dict[str, Any]:
        text_mode = request.mode == "text"
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
        if self._official:
            params["max_completion_tokens"] = cap
            if not text_mode:
                params["parallel_tool_calls"] = False
        else:
            # Local servers differ in what they accept: only the oldest, widest-known fields.
            params["max_tokens"] = cap
        return params

    @override
    def _answer(self, params: dict[str, Any], request: ModelRequest) -> Answer:
        native = self._protocol in NATIVE and request.mode != "text"
        return read(self._client.chat.completions.create(**params), native=native)


def create(options: OpenAIOptions) -> Provider:
    """The ``openai`` provider, behind the opt-in gate (``metered.open_client``).

    Raises:
        UsageError: what ``open_client`` refuses.
    """
    arguments = open_client("openai", options, openai.OpenAI)
    if options.base_url is not None:
        # The SDK reads OPENAI_ORG_ID and OPENAI_PROJECT_ID from the environment and sends
        # them as headers: the operator's account ids are no business of another server.
        arguments["client"].organization = None
        arguments["client"].project = None
    return OpenAICompatProvider(
        **arguments, official=options.base_url is None, protocol=options.tool_protocol
    )
