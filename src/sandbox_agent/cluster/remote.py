"""The Ray tasks: what runs on a node. Each run task is a streaming generator.

A run task first yields ``Started`` (which node, which owner label its sandboxes
carry), then, for the service, each trace event as it is written, and last
``Finished`` (the record or result, and the run's folder). The run itself goes on in
a thread of the task: a cancel from the caller (``ray.cancel``) raises
``KeyboardInterrupt`` where the task waits, which cancels the run's ``CancelToken``;
the controller then unwinds as for a local Ctrl-C and removes its sandbox before the
task ends.

Ray pickles these functions by reference: every node must have the same project
installed (docs/CLUSTER.md).
"""

from __future__ import annotations

import functools
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from sandbox_agent.cluster.payload import CaseBundle, FolderCopy, RunFolder
from sandbox_agent.controller.models import RunConfig
from sandbox_agent.evals.running.executor import EvalOptions
from sandbox_agent.sandbox.base import CancelToken

CANCEL_GRACE_S = 60.0
"""How long a cancelled run may take to unwind (remove its sandbox) before the task ends."""
POLL_S = 0.2
CANCEL_POLL_S = 0.5

T = TypeVar("T")
EventSink = Callable[[dict[str, Any]], None]


class Started(BaseModel):
    """The run began on this node; its sandboxes carry ``owner`` as their owner label."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["started"] = "started"
    node_id: str
    ip: str
    owner: str


class Event(BaseModel):
    """One trace event of a service run, as written (already redacted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["event"] = "event"
    event: dict[str, Any]


class Finished(BaseModel):
    """The run's outcome: a ``RunRecord`` (eval) or ``RunResult`` (service) as JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["finished"] = "finished"
    payload: str
    run_folder: RunFolder | None


Message = Started | Event | Finished


def _started() -> Started:
    import ray

    from sandbox_agent.sandbox.owner import owner_value

    context = ray.get_runtime_context()
    return Started(
        node_id=context.get_node_id(),
        ip=ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
        owner=owner_value(),
    )


def _in_thread(
    work: Callable[[CancelToken, EventSink], T],
    asked_to_cancel: Callable[[], bool] | None = None,
) -> Iterator[Event | T]:
    """Run ``work`` in a thread; yield its events as they come, then its result.

    A ``KeyboardInterrupt`` (``ray.cancel``) or any other interruption while waiting
    cancels the run's token and waits up to ``CANCEL_GRACE_S`` for it to unwind.
    ``asked_to_cancel`` (polled every ``CANCEL_POLL_S``) cancels the token too, but the
    run's result still comes back: what Ray's own cancel cannot do.
    """
    token = CancelToken()
    next_poll = time.monotonic() + CANCEL_POLL_S
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work(token, events.put))
        except BaseException as error:  # handed to the task's thread, raised there
            failure.append(error)

    thread = threading.Thread(target=target, name="cluster-run", daemon=True)
    thread.start()
    try:
        while thread.is_alive() or not events.empty():
            if asked_to_cancel is not None and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + CANCEL_POLL_S
                if not token.cancelled and asked_to_cancel():
                    token.cancel()
            try:
                yield Event(event=events.get(timeout=POLL_S))
            except queue.Empty:
                continue
    except BaseException:
        token.cancel()
        thread.join(CANCEL_GRACE_S)
        raise
    thread.join()
    if failure:
        raise failure[0]
    yield outcome[0]


def run_eval_case(bundle: CaseBundle, repeat: int, options: EvalOptions) -> Iterator[Message]:
    """One run of an eval case on this node: the agent, then the held-out check (same
    node, same backend), then the score; the record and the run's folder come back."""
    from sandbox_agent.cluster.payload import case_on_node, pack_run_folder
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.results.records import RunRecord
    from sandbox_agent.evals.running.executor import run_case
    from sandbox_agent.sandbox.docker_backend import DockerBackend

    yield _started()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-node-") as scratch:
        case = case_on_node(bundle, Path(scratch) / "case")
        here = options.model_copy(update={"trace_dir": Path(scratch) / "traces", "jobs": 1})
        backend = DockerBackend(reap_on_first_use=False)
        try:
            record: RunRecord | None = None
            for item in _in_thread(
                lambda token, _sink: run_case(case, repeat, here, backend, run_task, cancel=token)
            ):
                if isinstance(item, RunRecord):
                    record = item
        finally:
            backend.close()
        assert record is not None  # noqa: S101 - _in_thread yields the result last
        yield Finished(
            payload=record.model_dump_json(), run_folder=pack_run_folder(record.trace_path)
        )


def run_service_run(
    config: RunConfig, fixture: FolderCopy, plan: bytes | None, board: str
) -> Iterator[Message]:
    """One service run on this node, its trace events streamed back as they are written."""
    from sandbox_agent.cluster.payload import pack_run_folder, place
    from sandbox_agent.controller import run_task
    from sandbox_agent.controller.models import RunResult

    yield _started()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-node-") as scratch:
        root = Path(scratch)
        folder = place(fixture, root / "fixtures" / str(config.fixture))
        options = config.provider_options
        if plan is not None:
            (root / "plan.json").write_bytes(plan)
            options = options.model_copy(update={"plan_path": str(root / "plan.json")})
        here = config.model_copy(
            update={
                "fixtures_dir": folder.parent,
                "trace_dir": root / "traces",
                "provider_options": options,
            }
        )
        result: RunResult | None = None
        asked = functools.partial(_asked_to_cancel, board, str(config.run_id))

        def work(token: CancelToken, sink: EventSink) -> RunResult:
            return run_task(here, cancel=token, on_event=sink)

        for item in _in_thread(work, asked):
            if isinstance(item, Event):
                yield item
            else:
                result = item
        assert result is not None  # noqa: S101 - _in_thread yields the result last
        yield Finished(
            payload=result.model_dump_json(), run_folder=pack_run_folder(result.trace_path)
        )


def _asked_to_cancel(board: str, run_id: str) -> bool:
    """Whether the service asked to cancel ``run_id`` (on its cancel board, an actor)."""
    import ray

    from sandbox_agent.cluster.connect import NAMESPACE

    try:
        actor = ray.get_actor(board, namespace=NAMESPACE)
        return bool(ray.get(actor.cancelled.remote(run_id), timeout=10))
    except Exception:  # the service is gone: nobody is left to receive the result
        return True


def describe() -> dict[str, Any]:
    """This node's account of itself; it also reaps what dead runs left on its Docker."""
    from sandbox_agent.cluster.connect import describe_here

    found = describe_here()
    found["reaped"] = _reap_here()
    return found


def _reap_here() -> list[str]:
    try:
        from sandbox_agent.sandbox.reaper import reap_all

        removed, _failures = reap_all()
    except Exception:  # a node without Docker has nothing to reap; its preflight says why
        return []
    return removed


def reap() -> list[str]:
    """Remove what dead runs left on this node's Docker (containers, workspaces)."""
    return _reap_here()


@functools.cache
def eval_case_task() -> Any:
    """``run_eval_case`` as a Ray task (no CPU asked: the sandbox slot is what counts)."""
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(run_eval_case)


def run_eval_case_whole(bundle: CaseBundle, repeat: int, options: EvalOptions) -> list[Message]:
    """``run_eval_case`` as one result: every message at the end (for Ray Client)."""
    return list(run_eval_case(bundle, repeat, options))


@functools.cache
def whole_eval_case_task() -> Any:
    """``run_eval_case_whole`` as a Ray task."""
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(run_eval_case_whole)


@functools.cache
def service_run_task() -> Any:
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(run_service_run)


@functools.cache
def describe_task() -> Any:
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(describe)


@functools.cache
def reap_task() -> Any:
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(reap)


def node_pid() -> int:
    return os.getpid()
