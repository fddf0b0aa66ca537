"""Runs submitted runs: at most ``max_concurrent`` at once, a bounded queue beyond that.

Worker threads call the injected run function (``run_task`` in production) with a
``CancelToken`` per run, so ``cancel`` reaches a running sandbox within a second.
Every state change goes to the store first: a restart finds the truth there.

A worker survives anything one run does, and anything the store does to it (SR-8 S8-2): a
terminal status the store refuses (a lock held elsewhere past the busy timeout, a full
disk) is kept and written by the watchdog thread once the store takes writes again. The
watchdog also replaces a worker that died anyway, and ``health`` says when the service
cannot run work.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from pydantic import ValidationError

from sandbox_agent.controller.models import Budgets, RepairOptions, RunConfig, RunResult
from sandbox_agent.errors import (
    InfrastructureError,
    SandboxAgentError,
    SetupError,
    UsageError,
    WorkspaceError,
)
from sandbox_agent.providers.base import ProviderOptions
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.admission import admit
from sandbox_agent.service.models import IN_FLIGHT, SubmitRequest
from sandbox_agent.service.plans import remove_plan, remove_stale_plans, write_plan
from sandbox_agent.service.private import private_dir
from sandbox_agent.service.repos import (
    locate,
    remove_snapshot,
    remove_stale_snapshots,
    snapshot,
)
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore, StoredRun
from sandbox_agent.service.views import stored_limits

log = logging.getLogger(__name__)

INTERRUPTED_REASON = "the server stopped while this run was in flight"
NOT_STARTED_REASON = "the server stopped before this run started"
WATCHDOG_INTERVAL_S = 1.0

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


class QueueFull(SandboxAgentError):
    """Every worker is busy and the queue holds ``max_queue`` runs: try again later."""


class ServiceStopping(SandboxAgentError):
    """The server is shutting down and takes no more runs."""


class Terminal(NamedTuple):
    """A run's last state, waiting for the store to take it."""

    status: str
    reason: str
    result_json: str | None


def new_run_id() -> str:
    return uuid.uuid4().hex


class RunManager:
    """The queue, the worker threads and their watchdog, recording every transition."""

    def __init__(self, store: RunStore, run_fn: RunFunction, settings: ServiceSettings) -> None:
        self._store = store
        self._run_fn = run_fn
        self._settings = settings
        self._cond = threading.Condition()
        self._pending: deque[str] = deque()
        self._tokens: dict[str, CancelToken] = {}
        self._busy = 0
        self._reserved = 0
        self._stopping = False
        self._stop_deadline = 0.0
        self._workers: list[threading.Thread] = []
        self._unsettled: dict[str, Terminal] = {}
        """Terminal states the store refused; the watchdog writes them."""
        self._watchdog_stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    def start(self) -> list[str]:
        """Mark runs left in flight by a previous server ``INTERRUPTED``, remove what they
        left, then start the workers and the watchdog.

        Returns:
            The ids of the runs marked interrupted (their leftovers need reaping).
        """
        settings = self._settings
        for folder in (settings.work_dir, settings.plans_dir, settings.trace_dir):
            private_dir(folder, tighten=True)
        interrupted = self._store.interrupt_in_flight(INTERRUPTED_REASON)
        remove_stale_plans(settings.plans_dir, self._store)
        remove_stale_snapshots(settings.snapshots_dir, self._finished)
        for index in range(self._settings.max_concurrent):
            self._workers.append(self._start_worker(index))
        self._watchdog = threading.Thread(target=self._watch, name="run-watchdog", daemon=True)
        self._watchdog.start()
        return interrupted

    def begin_stop(self) -> None:
        """Start no more runs and cancel the running ones; queued ones end ``INTERRUPTED``
        now. Returns without waiting: ``stop`` waits."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._stop_deadline = time.monotonic() + self._settings.stop_timeout_s
            queued = list(self._pending)
            self._pending.clear()
            for token in self._tokens.values():
                token.cancel()
            self._cond.notify_all()
        try:
            self._store.interrupt_queued(queued, NOT_STARTED_REASON)
        except Exception:  # stop() marks whatever is still in flight once more
            log.exception("could not mark %d queued run(s) interrupted", len(queued))

    def stop(self, grace_s: float | None = None) -> None:
        """``begin_stop``, then wait for the runs to unwind until ``stop_timeout_s`` after
        the stop began (or ``grace_s`` from now), and mark the rest ``INTERRUPTED``."""
        self.begin_stop()
        deadline = self._stop_deadline if grace_s is None else time.monotonic() + grace_s
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self._watchdog_stop.set()
        if self._watchdog is not None:
            self._watchdog.join(max(0.0, deadline - time.monotonic()) + WATCHDOG_INTERVAL_S)
        self._settle_unsettled()
        try:
            self._store.interrupt_in_flight(INTERRUPTED_REASON)
        except Exception:  # the next start marks them
            log.exception("could not mark the runs in flight interrupted")

    def why_unavailable(self) -> str | None:
        """Why the service cannot run work now, or None when it can."""
        with self._cond:
            stopping = self._stopping
            unsettled = len(self._unsettled)
            alive = sum(worker.is_alive() for worker in self._workers)
        if stopping:
            return "the server is stopping"
        if alive == 0:
            return "no worker thread is running"
        if unsettled:
            return f"{unsettled} finished run(s) wait for the run database to take writes"
        if self._store.writes_failing:
            return "the run database refuses writes"
        return None

    def _finished(self, run_id: str) -> bool:
        stored = self._store.get(run_id)
        return stored is not None and stored.status not in IN_FLIGHT

    def submit(self, request: SubmitRequest, *, submitted_at: float) -> str:
        """Decide what the run gets (``admission.admit``), record it ``QUEUED`` and queue it.

        Raises:
            Refused: the request asks for what this server does not allow.
            QueueFull: no worker is idle and ``max_queue`` runs already wait.
            ServiceStopping: the server is shutting down.
            sqlite3.Error: the store refused the record.
        """
        admitted = admit(request, self._settings)
        run_id = new_run_id()
        plan_json = request.plan.model_dump_json() if request.plan else None
        with self._cond:
            if self._stopping:
                raise ServiceStopping("the server is shutting down")
            idle = self._settings.max_concurrent - self._busy
            if len(self._pending) + self._reserved >= self._settings.max_queue + idle:
                raise QueueFull(f"{self._settings.max_queue} runs are already queued")
            self._reserved += 1  # the slot is held while the record is written, unlocked
        repair_json = admitted.repair.model_dump_json() if admitted.repair else None
        record = StoredRun(
            run_id, "QUEUED", "", admitted.fixture, request.task, admitted.provider,
            plan_json, submitted_at, None, None, None, admitted.strategy, admitted.repo,
            admitted.budgets.model_dump_json(), repair_json,
        )  # fmt: skip
        try:
            # Not under the queue's lock: a write can wait out the busy timeout, and
            # /health and the workers take that lock.
            self._store.insert(record)
        except BaseException:
            with self._cond:
                self._reserved -= 1
            raise
        with self._cond:
            self._reserved -= 1
            queued = not self._stopping  # a stop that began meanwhile starts nothing
            if queued:
                self._pending.append(run_id)
                self._cond.notify()
        if not queued:
            self._store.interrupt_queued([run_id], NOT_STARTED_REASON)
        return run_id

    def cancel(self, run_id: str) -> str | None:
        """Cancel a run: a queued one ends ``CANCELLED`` at once, a running one is signalled.

        Returns:
            The run's status after the request, or None for an unknown run.
        """
        with self._cond:
            if run_id in self._pending:
                self._pending.remove(run_id)
                queued = True
            else:
                queued = False
                token = self._tokens.get(run_id)
                if token is not None:
                    token.cancel()
                    return "RUNNING"
        if queued:
            self._settle(run_id, Terminal("CANCELLED", "cancelled before it started", None))
            return "CANCELLED"
        stored = self._store.get(run_id)
        return stored.status if stored else None

    def _start_worker(self, index: int) -> threading.Thread:
        worker = threading.Thread(target=self._work, name=f"run-worker-{index}", daemon=True)
        worker.start()
        return worker

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                run_id = self._pending.popleft()
                token = CancelToken()
                self._tokens[run_id] = token
                self._busy += 1
            try:
                self._execute(run_id, token)
            except BaseException as error:  # a worker survives anything one run does
                log.exception("run %s: the executor failed", run_id)
                reason = f"internal error in the service ({type(error).__name__})"
                self._settle(run_id, Terminal("SANDBOX_ERROR", reason, None))
            finally:
                with self._cond:
                    self._busy -= 1
                    self._tokens.pop(run_id, None)

    def _execute(self, run_id: str, token: CancelToken) -> None:
        stored = self._store.get(run_id)
        if stored is None or not self._store.mark_running(run_id):
            return
        plan_path: Path | None = None
        copied: Path | None = None
        try:
            if stored.plan_json is not None:
                plan_path = write_plan(self._settings.plans_dir, run_id, stored.plan_json)
            if stored.repo is not None:
                copied = self._settings.snapshots_dir / run_id
                name = self._snapshot(stored.repo, copied)
                config = self._config(stored, plan_path, fixture=name, fixtures_dir=copied)
            else:
                config = self._config(stored, plan_path)
            result = self._run_fn(config, cancel=token, on_event=self._event_sink(run_id))
        except (UsageError, ValidationError) as error:
            self._settle(run_id, Terminal("FAILED", f"rejected: {_one_line(error)}", None))
            return
        except (SetupError, InfrastructureError) as error:
            self._settle(run_id, Terminal("SANDBOX_ERROR", _one_line(error), None))
            return
        finally:
            if plan_path is not None:
                remove_plan(plan_path)
            if copied is not None:
                remove_snapshot(copied)
        if self._stopping and token.cancelled:
            status, reason = "INTERRUPTED", INTERRUPTED_REASON
        else:
            status, reason = result.status, result.reason
        self._settle(run_id, Terminal(status, reason, result.model_dump_json()))

    def _event_sink(self, run_id: str) -> EventSink:
        sequence = itertools.count(1)

        def on_event(event: dict[str, Any]) -> None:
            # Never raises into the run: the trace file is the evidence, this is its copy.
            try:
                self._store.append_event(run_id, next(sequence), event)
            except Exception as error:
                log.warning("run %s: a trace event was not stored (%s)", run_id, error)

        return on_event

    def _settle(self, run_id: str, terminal: Terminal) -> None:
        """Record a run's terminal state; if the store refuses, the watchdog retries it."""
        try:
            self._store.finish(run_id, *terminal)
        except Exception as error:
            log.warning("run %s: %s not recorded yet (%s)", run_id, terminal.status, error)
            with self._cond:
                self._unsettled[run_id] = terminal

    def _settle_unsettled(self) -> None:
        with self._cond:
            waiting = list(self._unsettled.items())
        for run_id, terminal in waiting:
            try:
                self._store.finish(run_id, *terminal)
            except Exception:
                return  # still refused: the next round tries again
            with self._cond:
                self._unsettled.pop(run_id, None)
            log.warning("run %s: %s recorded after all", run_id, terminal.status)

    def _watch(self) -> None:
        while not self._watchdog_stop.wait(WATCHDOG_INTERVAL_S):
            try:
                self._settle_unsettled()
                with self._cond:
                    waiting = bool(self._unsettled)
                if not waiting and self._store.writes_failing:
                    self._store.probe_write()
                self._replace_dead_workers()
            except Exception:  # the watchdog must outlive what it watches
                log.exception("the run watchdog failed a round")

    def _replace_dead_workers(self) -> None:
        with self._cond:
            if self._stopping:
                return
            for index, worker in enumerate(self._workers):
                if not worker.is_alive():
                    log.error("%s ended: starting another", worker.name)
                    self._workers[index] = self._start_worker(index)

    def _snapshot(self, requested: str, folder: Path) -> str:
        """Copy the requested folder into ``folder/<name>``, checked again now; return
        the name (the run is given the copy as a fixture of ``folder``).

        Raises:
            RepoRefused: the path is no longer one this server may read.
            UsageError: the folder is over the copy's limits.
            WorkspaceError: the copy failed.
        """
        location = locate(requested, self._settings.repo_roots)
        try:
            private_dir(self._settings.snapshots_dir, tighten=False)
            private_dir(folder, tighten=False)
            snapshot(location, folder / location.name)
        except OSError as error:
            raise WorkspaceError(f"the copy of repo {requested!r} failed: {error}") from None
        return location.name

    def _config(
        self,
        stored: StoredRun,
        plan_path: Path | None,
        *,
        fixture: str | None = None,
        fixtures_dir: Path | None = None,
    ) -> RunConfig:
        options = ProviderOptions(plan_path=str(plan_path) if plan_path else None, run_id=stored.id)
        budgets, repair = stored_limits(stored)
        return RunConfig(
            task=stored.task,
            fixture=fixture or stored.fixture,
            fixtures_dir=fixtures_dir or self._settings.fixtures_dir,
            provider=stored.provider,
            provider_options=options,
            runtime=self._settings.runtime,
            trace_dir=self._settings.trace_dir,
            run_id=stored.id,
            budgets=budgets or Budgets(),
            strategy="repair" if stored.strategy == "repair" else "tools",
            repair=repair or RepairOptions(),
        )


def _one_line(error: BaseException, limit: int = 500) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:limit]
