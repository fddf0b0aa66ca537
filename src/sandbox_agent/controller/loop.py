"""The controller loop (in progress: the signature is the contract others code against)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend

EventSink = Callable[[dict[str, Any]], None]


def run_task(
    config: RunConfig,
    *,
    cancel: CancelToken | None = None,
    on_event: EventSink | None = None,
    on_final_workspace: Callable[[Path], None] | None = None,
    sandbox: SandboxBackend | None = None,
) -> RunResult:
    """Run one task to a terminal status computed from evidence.

    Args:
        config: what to run, with which provider and limits.
        cancel: set from outside (a signal, the API) to stop the run; it unwinds cleanly.
        on_event: receives each trace event (already redacted) as it is written.
        on_final_workspace: called with the workspace root after the final test run,
            before clean-up (the eval harness copies the final tree from there).
        sandbox: the backend that runs tests; a ``DockerBackend`` when None.

    Raises:
        UsageError: the fixture, repository, provider or plan is not usable.
        SetupError: the host lacks what the run needs (Docker, the runner image).
    """
    raise NotImplementedError("run_task is being built (issue 5)")
