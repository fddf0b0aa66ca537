"""The ``anthropic`` provider: the Messages API with tool use, through the official SDK.

The transcript is replayed in the API's own form: a past tool call becomes an
assistant ``tool_use`` block with an id, and the controller's answer a ``tool_result``
block with the same id. The reply goes back to the controller as raw text, unvalidated.
"""

from __future__ import annotations

from typing import Any

import anthropic
from typing_extensions import override

from sandbox_agent.providers.base import CUT_OFF_NOTE, ModelRequest, Provider
from sandbox_agent.providers.gate import KEY_ENV
from sandbox_agent.providers.meter import Answer, TokenCounts, read_answer, token_counts
from sandbox_agent.providers.metered import MeteredProvider, SdkErrors, open_client
from sandbox_agent.providers.options import AnthropicOptions
from sandbox_agent.providers.tooldefs import (
    anthropic_tools,
    past_call,
    raw_tool_call,
)

EMPTY_REPLY_PLACEHOLDER = "(no output)"
"""Replayed for an empty past reply: the API refuses empty text blocks."""


def build_messages(request: ModelRequest, offered: set[str]) -> list[dict[str, Any]]:
    """The task and the transcript as Messages API turns (tool_use / tool_result pairs)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": request.task}]
    for turn, exchange in enumerate(request.history):
        call = past_call(exchange.reply, offered)
        if call is None:
            text = exchange.reply or EMPTY_REPLY_PLACEHOLDER
            messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
            messages.append({"role": "user", "content": exchange.observation})
            continue
        call_id = f"toolu_sa{turn:04d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call_id, "name": call.name, "input": call.args}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": exchange.observation}
                ],
            }
        )
    return messages


def reply_text(message: anthropic.types.Message) -> tuple[str, tuple[str, ...]]:
    """The raw output for the controller, and notes on what was seen but not passed on."""
    notes: list[str] = []
    if message.stop_reason == "refusal":
        notes.append("refusal")
    if message.stop_reason == "max_tokens":
        notes.append(CUT_OFF_NOTE)
    tool_uses = [block for block in message.content if block.type == "tool_use"]
    if not tool_uses:
        notes.append("no tool call")
        text = "".join(block.text for block in message.content if block.type == "text")
        return text, tuple(notes)
    if len(tool_uses) > 1:
        notes.append(f"{len(tool_uses)} tool calls returned; only the first was kept")
    return raw_tool_call(tool_uses[0].name, tool_uses[0].input), tuple(notes)


def usage_of(message: anthropic.types.Message) -> TokenCounts | None:
    """Input (cache reads and writes included, priced as input) and output tokens."""
    usage = message.usage
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return token_counts(usage.input_tokens + cached, usage.output_tokens)


def read(message: anthropic.types.Message) -> Answer:
    """Everything the provider needs from one answer, or ``UnreadableAnswer``."""
    return read_answer(lambda: (*reply_text(message), usage_of(message), str(message.model or "")))


class AnthropicProvider(MeteredProvider, Provider):
    """Model turns from the Messages API, each request metered through the spend ledger."""

    name = "anthropic"
    sdk_errors = SdkErrors(
        anthropic.APIStatusError,
        anthropic.APIConnectionError,
        anthropic.APITimeoutError,
        anthropic.APIError,
    )
    key_env = KEY_ENV["anthropic"]

    @override
    def _params(
        self, request: ModelRequest, tools: list[dict[str, object]], cap: int
    ) -> dict[str, Any]:
        offered = {str(tool["name"]) for tool in tools}
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": cap,
            "system": request.system,
            "messages": build_messages(request, offered),
        }
        if request.mode != "text":
            params["tools"] = anthropic_tools(tools)
            # One tool call per turn. Not forced ("any"): newer models refuse forced tool
            # use, and a turn without a tool call is counted by the controller anyway.
            params["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        if request.sampling is not None:  # the Messages API takes no seed
            params["temperature"] = min(request.sampling.temperature, 1.0)
        return params

    @override
    def _answer(self, params: dict[str, Any], request: ModelRequest) -> Answer:
        return read(self._client.messages.create(**params))


def create(options: AnthropicOptions) -> Provider:
    """The ``anthropic`` provider, behind the opt-in gate (``metered.open_client``).

    Raises:
        UsageError: what ``open_client`` refuses.
    """
    return AnthropicProvider(**open_client("anthropic", options, anthropic.Anthropic))
