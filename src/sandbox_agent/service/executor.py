"""Runs submitted runs: at most ``max_concurrent`` at once, a bounded queue beyond that.

Worker threads call the injected run function (``run_task`` in production) with a
``CancelToken`` per run, so ``cancel`` reaches a running sandbox within a second; what one
run is (its plan, its repository's copy, its configuration, its end) is ``one_run``'s.
Every state change goes to the store first: a restart finds the truth there.

A worker survives anything one run does, and anything the store does to it (SR-8 S8-2): a
terminal status the store refuses (a lock held elsewhere past the busy timeout, a full
disk) is kept and written by the watchdog thread once the store takes writes again. The
watchdog also replaces a worker that died anyway, and ``health`` says when the service
cannot run work.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque

from sandbox_agent.errors import SandboxAgentError
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.admission import admit
from sandbox_agent.service.models import IN_FLIGHT, SubmitRequest
from sandbox_agent.service.one_run import (
    INTERRUPTED_REASON,
    RunFunction,
    Terminal,
    event_sink,
    execute_run,
)
from sandbox_agent.service.plans import remove_stale_plans
from sandbox_agent.service.private import private_dir
from sandbox_agent.service.repos import remove_stale_snapshots
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore, StoredRun

log = logging.getLogger(__name__)

NOT_STARTED_REASON = "the server stopped before this run started"
WATCHDOG_INTERVAL_S = 1.0


class QueueFull(SandboxAgentError):
    """Every worker is busy and the queue holds ``max_queue`` runs: try again later."""


class ServiceStopping(SandboxAgentError):
    """The server is shutting down and takes no more runs."""


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
            admitted.budgets.model_dump_json(), repair_json, int(admitted.allow_no_tests),
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
        sink = event_sink(self._store, run_id)
        terminal = execute_run(
            stored,
            settings=self._settings,
            run_fn=self._run_fn,
            token=token,
            on_event=sink,
            stopping=lambda: self._stopping,
        )
        self._settle(run_id, terminal)

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
