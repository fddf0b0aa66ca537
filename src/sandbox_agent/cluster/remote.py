"""The transport of one run: what a run task on a node streams back, and how it runs there.

A run task (``evals.running.on_node``, ``service.cluster``) is a streaming generator: it
first yields ``Started`` (which node, which owner label its sandboxes carry), then any
trace events as they are written (``Event``), and last ``Finished`` (the record or
result as JSON, and the run's folder). The run itself goes on in a thread of the task
(``in_thread``): a cancel from the caller (``ray.cancel``) raises ``KeyboardInterrupt``
where the task waits, which cancels the run's ``CancelToken``; the controller then
unwinds as for a local Ctrl-C and removes its sandbox before the task ends.

Ray pickles task functions by reference: every node must have the same project
installed (docs/CLUSTER.md).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from sandbox_agent.cluster.payload import RunFolder
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


def started() -> Started:
    """This node's ``Started``: the first message of a run task."""
    import ray

    from sandbox_agent.sandbox.docker.owner import owner_value

    context = ray.get_runtime_context()
    return Started(
        node_id=context.get_node_id(),
        ip=ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
        owner=owner_value(),
    )


def in_thread(
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


def as_task(function: Callable[..., Any]) -> Any:
    """``function`` as a Ray task that asks for no CPU (the sandbox slot a caller asks for
    is what counts) and is never retried by Ray (a lost run is the caller's to handle)."""
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(function)
