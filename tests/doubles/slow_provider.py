"""``scripted-slow``, a test double: the scripted provider, waiting ``TURN_SECONDS``
before each turn.

A simulated model that takes the time a real one would, without using the CPU: for
measuring how runs spread over cluster nodes (``make bench``) and for tests that need
a run still going when something happens to its node. Not a model result, and not in
the package: loading this file registers it (``providers.register_test_double``); the
suite names it in ``SANDBOX_AGENT_TEST_DOUBLES`` (``tests/conftest.py``), so the
processes a test starts (the CLI, ``serve``, Ray nodes) load it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from typing_extensions import override

from sandbox_agent.providers import register_test_double
from sandbox_agent.providers.base import Cancellation, ModelReply, ModelRequest, Provider
from sandbox_agent.providers.errors import RetryNotice
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.providers.scripted import ScriptedProvider, plan_from_options

NAME = "scripted-slow"
TURN_SECONDS = 1.0


class SlowScriptedProvider(ScriptedProvider):
    """Each turn is the plan's next step, given after ``TURN_SECONDS`` (or the deadline,
    or the run's cancel: a thinking model is interrupted like a real one)."""

    name = NAME
    _cancel: Cancellation | None = None

    def watch(
        self, cancel: Cancellation, on_retry: Callable[[RetryNotice], None] | None = None
    ) -> None:
        """Wake from a turn's wait when ``cancel`` is set (``providers.base.Watchful``)."""
        self._cancel = cancel

    @override
    def complete(self, request: ModelRequest) -> ModelReply:
        wait = TURN_SECONDS
        if request.deadline is not None:
            wait = max(0.0, min(wait, request.deadline - time.monotonic()))
        if self._cancel is None:
            time.sleep(wait)
        else:
            self._cancel.wait(wait)
        reply = super().complete(request)
        return reply.model_copy(update={"model": self.name})


def create(options: PlanOptions) -> Provider:
    """The double's factory: the plan, as ``scripted`` finds it.

    Raises:
        UsageError: no plan, or a bad plan file.
    """
    return SlowScriptedProvider(plan_from_options(options))


register_test_double(NAME, create, PlanOptions)
