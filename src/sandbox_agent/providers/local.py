"""The ``local`` provider: the OpenAI-compatible provider against this project's own server.

The server (``sandbox_agent.localmodel``) is started on demand and left running for the
next run. It listens on loopback with a generated key, so this provider needs no opt-in
gate, no key in the environment and no prices: it spends nothing and reaches no
network. Requests still go through the ledger at price 0, so the call and token
budgets hold as for any real model. Sampling is greedy (temperature 0, a fixed seed).

When the server dies mid-run, the request fails without the usual retries and the run
ends with a provider error whose diagnostics hold the server's last log lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
from typing_extensions import override

from sandbox_agent.errors import InfrastructureError, ModelServerGone
from sandbox_agent.ledger.prices import Price
from sandbox_agent.localmodel import pins, process, server
from sandbox_agent.providers.base import ModelReply, ModelRequest, Provider
from sandbox_agent.providers.meter import Failure
from sandbox_agent.providers.metered import meter_for, sdk_client, transport_for
from sandbox_agent.providers.openai_compat import OpenAICompatProvider
from sandbox_agent.providers.options import LocalOptions

DEFAULT_SEED = 1234
"""The local kind's other defaults (reply cap, time-out, tool protocol) are its options'
(``providers.options.LocalOptions``)."""


class LocalProvider(OpenAICompatProvider, Provider):
    """``OpenAICompatProvider`` bound to the local server, aware of its context window."""

    name = "local"

    def __init__(self, *, record: server.ServerRecord, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._record = record

    @override
    def sdk_failure(self, error: Exception) -> Failure | None:
        """A failed request to a server that is no longer running: final, not retried;
        else as for any OpenAI-compatible server."""
        if not server.alive(self._record):
            return Failure("failed", False, False, None, "the local model server is not running")
        return super().sdk_failure(error)

    def prompt_token_budget(self) -> int | None:
        """The server's context window (``model start --context-tokens``) less the reply cap."""
        return self._record.context_tokens - self._max_output_tokens

    @override
    def complete(self, request: ModelRequest) -> ModelReply:
        """Return the next turn.

        Raises:
            BudgetExhausted: a call or token budget would be exceeded by this request.
            ModelServerGone: the server process died; how it ended and its last log lines
                are attached.
            InfrastructureError: the server failed the request, after retries.
        """
        try:
            return super().complete(request)
        except InfrastructureError:
            if server.alive(self._record):
                raise
            raise ModelServerGone(
                "the local model server exited during the run",
                diagnostics={
                    "server_pid": self._record.pid,
                    "log_file": self._record.log_file,
                    "ended": process.wait_ended(Path(self._record.log_file), self._record.pid),
                    "log_tail": process.log_tail(Path(self._record.log_file)),
                },
            ) from None


def create(options: LocalOptions) -> Provider:
    """The ``local`` provider, its server started if it is not running.

    Raises:
        SetupError: the server or the model is missing (``make model``), or it would
            not start (the message gives its last log line).
        UsageError: the ledger cannot be opened.
    """
    record = server.ensure_running()
    bounded = transport_for(options)
    base_url = f"{record.root}/v1"
    client = sdk_client(
        openai.OpenAI, api_key=server.read_key(record), base_url=base_url, bounded=bounded
    )
    client.organization = None
    client.project = None
    return LocalProvider(
        record=record,
        client=client,
        transport=bounded.transport,
        model=pins.MODEL_NAME,
        meter=meter_for(options, provider="local", model=pins.MODEL_NAME, price=Price(0.0, 0.0)),
        max_output_tokens=options.max_output_tokens,
        official=False,
        protocol=options.tool_protocol,
        sampling={"temperature": 0.0, "seed": DEFAULT_SEED},
    )
