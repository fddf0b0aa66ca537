"""Runs submitted runs: at most ``max_concurrent`` at once, a bounded queue beyond that.

Worker threads call the injected run function (``run_task`` in production) with a
``CancelToken`` per run, so ``cancel`` reaches a running sandbox within a second.
Every state change goes to the store first: a restart finds the truth there.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.errors import InfrastructureError, SandboxAgentError, SetupError, UsageError
from sandbox_agent.providers.base import ProviderOptions
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.service.models import SubmitRequest
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore, StoredRun

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0
"""How long ``stop`` waits for cancelled runs to unwind before it marks them interrupted."""
INTERRUPTED_REASON = "the server stopped while this run was in flight"

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


def new_run_id() -> str:
    return uuid.uuid4().hex


class RunManager:
    """The queue and the worker threads, recording every transition in the store."""

    def __init__(self, store: RunStore, run_fn: RunFunction, settings: ServiceSettings) -> None:
        self._store = store
        self._run_fn = run_fn
        self._settings = settings
        self._cond = threading.Condition()
        self._pending: deque[str] = deque()
        self._tokens: dict[str, CancelToken] = {}
        self._busy = 0
        self._stopping = False
        self._workers: list[threading.Thread] = []

    def start(self) -> list[str]:
        """Mark runs left in flight by a previous server ``INTERRUPTED``, then start the workers.

        Returns:
            The ids of the runs marked interrupted (their leftovers need reaping).
        """
        interrupted = self._store.interrupt_in_flight(INTERRUPTED_REASON)
        for index in range(self._settings.max_concurrent):
            worker = threading.Thread(target=self._work, name=f"run-worker-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        return interrupted

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Cancel every run, wait up to ``grace_s`` for them to end, mark the rest interrupted."""
        with self._cond:
            self._stopping = True
            for token in self._tokens.values():
                token.cancel()
            self._cond.notify_all()
        for worker in self._workers:
            worker.join(grace_s)
        self._store.interrupt_in_flight(INTERRUPTED_REASON)

    def submit(self, request: SubmitRequest, *, submitted_at: float) -> str:
        """Record a run as ``QUEUED`` and queue it.

        Raises:
            QueueFull: no worker is idle and ``max_queue`` runs already wait.
            ServiceStopping: the server is shutting down.
        """
        run_id = new_run_id()
        plan_json = request.plan.model_dump_json() if request.plan else None
        with self._cond:
            if self._stopping:
                raise ServiceStopping("the server is shutting down")
            idle = self._settings.max_concurrent - self._busy
            if len(self._pending) >= self._settings.max_queue + idle:
                raise QueueFull(f"{self._settings.max_queue} runs are already queued")
            record = StoredRun(
                run_id, "QUEUED", "", request.fixture, request.task, request.provider,
                plan_json, submitted_at, None, None, None,
            )  # fmt: skip
            self._store.insert(record)
            self._pending.append(run_id)
            self._cond.notify()
        return run_id

    def cancel(self, run_id: str) -> str | None:
        """Cancel a run: a queued one ends ``CANCELLED`` at once, a running one is signalled.

        Returns:
            The run's status after the request, or None for an unknown run.
        """
        with self._cond:
            if run_id in self._pending:
                self._pending.remove(run_id)
                self._store.finish(run_id, "CANCELLED", "cancelled before it started")
                return "CANCELLED"
            token = self._tokens.get(run_id)
            if token is not None:
                token.cancel()
                return "RUNNING"
        stored = self._store.get(run_id)
        return stored.status if stored else None

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
            except Exception:  # a worker must survive anything one run does
                log.exception("run %s: the executor failed", run_id)
                self._store.finish(run_id, "SANDBOX_ERROR", "internal error in the service")
            finally:
                with self._cond:
                    self._busy -= 1
                    del self._tokens[run_id]

    def _execute(self, run_id: str, token: CancelToken) -> None:
        stored = self._store.get(run_id)
        if stored is None or not self._store.mark_running(run_id):
            return
        plan_path = self._write_plan(run_id, stored.plan_json)
        sequence = itertools.count(1)

        def on_event(event: dict[str, Any]) -> None:
            self._store.append_event(run_id, next(sequence), event)

        try:
            config = self._config(stored, plan_path)
            result = self._run_fn(config, cancel=token, on_event=on_event)
        except (UsageError, ValidationError) as error:
            self._store.finish(run_id, "FAILED", f"rejected: {_one_line(error)}")
            return
        except (SetupError, InfrastructureError) as error:
            self._store.finish(run_id, "SANDBOX_ERROR", _one_line(error))
            return
        finally:
            if plan_path is not None:
                plan_path.unlink(missing_ok=True)
        if self._stopping and token.cancelled:
            self._store.finish(run_id, "INTERRUPTED", INTERRUPTED_REASON, result.model_dump_json())
        else:
            self._store.finish(run_id, result.status, result.reason, result.model_dump_json())

    def _write_plan(self, run_id: str, plan_json: str | None) -> Path | None:
        if plan_json is None:
            return None
        self._settings.plans_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._settings.plans_dir / f"{run_id}.json"
        path.write_text(plan_json, encoding="utf-8")
        return path

    def _config(self, stored: StoredRun, plan_path: Path | None) -> RunConfig:
        options = ProviderOptions(plan_path=str(plan_path) if plan_path else None, run_id=stored.id)
        return RunConfig(
            task=stored.task,
            fixture=stored.fixture,
            fixtures_dir=self._settings.fixtures_dir,
            provider=stored.provider,
            provider_options=options,
            runtime=self._settings.runtime,
            trace_dir=self._settings.trace_dir,
            run_id=stored.id,
        )


def _one_line(error: BaseException, limit: int = 500) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:limit]
