"""``scripted-slow``: the scripted provider, waiting ``TURN_SECONDS`` before each turn.

A simulated model that takes the time a real one would, without using the CPU: for
measuring how runs spread over cluster nodes (``make bench``) and for tests that need
a run still going when something happens to its node. Not a model result.
"""

from __future__ import annotations

import time

from typing_extensions import override

from sandbox_agent.providers.base import ModelReply, ModelRequest, Provider, ProviderOptions
from sandbox_agent.providers.scripted import ScriptedProvider, plan_from_options

TURN_SECONDS = 1.0


class SlowScriptedProvider(ScriptedProvider):
    """Each turn is the plan's next step, given after ``TURN_SECONDS`` (or the deadline)."""

    name = "scripted-slow"

    @override
    def complete(self, request: ModelRequest) -> ModelReply:
        wait = TURN_SECONDS
        if request.deadline is not None:
            wait = max(0.0, min(wait, request.deadline - time.monotonic()))
        time.sleep(wait)
        reply = super().complete(request)
        return reply.model_copy(update={"model": self.name})


def create(options: ProviderOptions) -> Provider:
    """Factory of the provider table.

    Raises:
        UsageError: no plan, or a bad plan file.
    """
    return SlowScriptedProvider(plan_from_options(options))
