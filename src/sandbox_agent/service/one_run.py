"""One queued run of the service, carried out: its inline plan written, its repository
copied (a ``repo`` run), its ``RunConfig`` built from what was stored, the run function
called, and its terminal state decided (``execute_run``). The executor's workers call it
and record what it returns; what is written for the run is removed afterwards."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from pydantic import ValidationError

from sandbox_agent.controller.models import Budgets, RepairOptions, RunConfig, RunResult
from sandbox_agent.controller.test_files import ALLOW_FLAG
from sandbox_agent.errors import InfrastructureError, SetupError, UsageError, WorkspaceError
from sandbox_agent.providers import options_for
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.plans import remove_plan, write_plan
from sandbox_agent.service.private import private_dir
from sandbox_agent.service.repos import locate, remove_snapshot, snapshot
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore, StoredRun
from sandbox_agent.service.views import stored_limits

log = logging.getLogger(__name__)

INTERRUPTED_REASON = "the server stopped while this run was in flight"
ALLOW_FIELD = '"allow_no_tests": true in the request'
"""What a refusal that names ``run``'s ``--allow-no-tests`` says instead here."""

EventSink = Callable[[dict[str, Any]], None]


class RunFunction(Protocol):
    """What the executor calls for one run: ``sandbox_agent.controller.run_task`` or a double."""

    def __call__(
        self,
        config: RunConfig,
        *,
        cancel: CancelToken | None = None,
        on_event: EventSink | None = None,
    ) -> RunResult: ...


class Terminal(NamedTuple):
    """A run's last state, waiting for the store to take it."""

    status: str
    reason: str
    result_json: str | None


def execute_run(
    stored: StoredRun,
    *,
    settings: ServiceSettings,
    run_fn: RunFunction,
    token: CancelToken,
    on_event: EventSink,
    stopping: Callable[[], bool],
) -> Terminal:
    """Run ``stored`` and say how it ended: a request the controller refused ends
    ``FAILED``, a host that lacks what it needs ``SANDBOX_ERROR``, a run cancelled by the
    server's stop ``INTERRUPTED``; otherwise the run's own status and result."""
    plan_path: Path | None = None
    copied: Path | None = None
    try:
        if stored.plan_json is not None:
            plan_path = write_plan(settings.plans_dir, stored.id, stored.plan_json)
        if stored.repo is not None:
            copied = settings.snapshots_dir / stored.id
            name = _snapshot(stored.repo, copied, settings)
            config = run_config(stored, settings, plan_path, fixture=name, fixtures_dir=copied)
        else:
            config = run_config(stored, settings, plan_path)
        result = run_fn(config, cancel=token, on_event=on_event)
    except (UsageError, ValidationError) as error:
        said = _one_line(error).replace(ALLOW_FLAG, ALLOW_FIELD)  # the request's word for it
        return Terminal("FAILED", f"rejected: {said}", None)
    except (SetupError, InfrastructureError) as error:
        return Terminal("SANDBOX_ERROR", _one_line(error), None)
    finally:
        if plan_path is not None:
            remove_plan(plan_path)
        if copied is not None:
            remove_snapshot(copied)
    if stopping() and token.cancelled:
        return Terminal("INTERRUPTED", INTERRUPTED_REASON, result.model_dump_json())
    return Terminal(result.status, result.reason, result.model_dump_json())


def event_sink(store: RunStore, run_id: str) -> EventSink:
    """Where a run's trace events go: the store's copy, numbered from 1."""
    sequence = itertools.count(1)

    def on_event(event: dict[str, Any]) -> None:
        # Never raises into the run: the trace file is the evidence, this is its copy.
        try:
            store.append_event(run_id, next(sequence), event)
        except Exception as error:
            log.warning("run %s: a trace event was not stored (%s)", run_id, error)

    return on_event


def _snapshot(requested: str, folder: Path, settings: ServiceSettings) -> str:
    """Copy the requested folder into ``folder/<name>``, checked again now; return
    the name (the run is given the copy as a fixture of ``folder``).

    Raises:
        RepoRefused: the path is no longer one this server may read.
        UsageError: the folder is over the copy's limits.
        WorkspaceError: the copy failed.
    """
    location = locate(requested, settings.repo_roots)
    try:
        private_dir(settings.snapshots_dir, tighten=False)
        private_dir(folder, tighten=False)
        snapshot(location, folder / location.name)
    except OSError as error:
        raise WorkspaceError(f"the copy of repo {requested!r} failed: {error}") from None
    return location.name


def run_config(
    stored: StoredRun,
    settings: ServiceSettings,
    plan_path: Path | None,
    *,
    fixture: str | None = None,
    fixtures_dir: Path | None = None,
) -> RunConfig:
    """The controller configuration of a stored run on this server."""
    options = options_for(
        stored.provider,
        plan_path=str(plan_path) if plan_path else None,
        run_id=stored.id,
        **settings.model_options,
    )
    budgets, repair = stored_limits(stored)
    return RunConfig(
        task=stored.task,
        fixture=fixture or stored.fixture,
        fixtures_dir=fixtures_dir or settings.fixtures_dir,
        provider=stored.provider,
        provider_options=options,
        runtime=settings.runtime,
        trace_dir=settings.trace_dir,
        run_id=stored.id,
        budgets=budgets or Budgets(),
        strategy="repair" if stored.strategy == "repair" else "tools",
        repair=repair or RepairOptions(),
        allow_no_tests=bool(stored.allow_no_tests),
    )


def _one_line(error: BaseException, limit: int = 500) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:limit]
