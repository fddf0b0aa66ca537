"""``serve --ray``: the service's run function, running each queued run on the cluster.

The service keeps its API, its database and its worker threads; each worker thread
hands its run to a node (``run_service_run``, below) and waits for it, writing every
trace event to the store as the node streams it (live progress as for a local run).
The fixture and an inline plan cross as bytes; the run's folder comes back under the
service's own trace folder. Cancelling a run asks the node through a cancel board (an
actor): the node cancels the run, which ends ``CANCELLED`` with its result and trace,
as locally. A run whose node is lost ends ``SANDBOX_ERROR`` naming the node.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sandbox_agent.cluster.connect import NAMESPACE
from sandbox_agent.cluster.node import slot_resource
from sandbox_agent.cluster.nodes import NodeInfo, describe_nodes, node_name
from sandbox_agent.cluster.payload import (
    FolderCopy,
    copy_of,
    pack_run_folder,
    place,
    unpack_run_folder,
)
from sandbox_agent.cluster.remote import (
    Event,
    Finished,
    Message,
    Started,
    as_task,
    in_thread,
    started,
)
from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.errors import InfrastructureError, SetupError, UsageError
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import CancelToken, Runtime
from sandbox_agent.service.one_run import EventSink

POLL_S = 0.5
STOP_WAIT_S = 30.0
"""After the service asked a node to cancel, how long before Ray's own cancel is used."""


class CancelBoard:
    """Run ids the service asked to cancel; nodes ask it about their run (an actor)."""

    def __init__(self) -> None:
        self._cancelled: set[str] = set()

    def cancel(self, run_id: str) -> None:
        self._cancelled.add(run_id)

    def cancelled(self, run_id: str) -> bool:
        return run_id in self._cancelled

    def forget(self, run_id: str) -> None:
        self._cancelled.discard(run_id)


class ClusterRunFunction:
    """``service.one_run.RunFunction`` on the cluster (one per ``serve --ray``)."""

    def __init__(self, runtime: Runtime, ledger_path: str | None = None) -> None:
        """Start the cancel board and the cluster's ledger; the caller has joined the cluster.

        Raises:
            SetupError: no node advertises slots for ``runtime``.
        """
        import ray

        from sandbox_agent.ledger.actor import start_ledger_actor

        self.runtime = runtime
        self.nodes = describe_nodes(runtime)
        if not self.usable():
            found = "; ".join(f"{node.name}: {node.problem}" for node in self.nodes)
            raise SetupError(f"no node of the cluster can run {runtime} sandboxes ({found})")
        self._board_name = f"cancel-board-{id(self):x}"
        board: Any = (
            ray.remote(num_cpus=0)(CancelBoard)
            .options(
                name=self._board_name,
                namespace=NAMESPACE,
                resources={"node:__internal_head__": 0.001},
            )
            .remote()
        )
        self._board = board
        self._ledger, self.ledger_location = start_ledger_actor(ledger_path, NAMESPACE)

    def usable(self) -> list[NodeInfo]:
        return [node for node in self.nodes if not node.problem]

    def slots(self) -> int:
        """Sandbox slots of every usable node: how many runs the cluster takes at once."""
        return int(sum(node.slots.get(self.runtime, 0) for node in self.usable()))

    def __call__(
        self,
        config: RunConfig,
        *,
        cancel: CancelToken | None = None,
        on_event: EventSink | None = None,
    ) -> RunResult:
        """Run ``config`` on a node with a free slot; stream its events; return its result.

        Raises:
            UsageError: the fixture or plan cannot be shipped, or the node refused the run.
            SetupError: the node lacks what the run needs.
            InfrastructureError: the run's node was lost.
        """
        import ray

        from sandbox_agent.settings import default_fixtures_dir

        token = cancel or CancelToken()
        fixtures_dir = config.fixtures_dir or default_fixtures_dir()
        fixture = copy_of(fixtures_dir / str(config.fixture))
        options = config.provider_options
        plan_path = options.plan_path if isinstance(options, PlanOptions) else None
        plan = Path(plan_path).read_bytes() if plan_path else None
        shipped = config.model_copy(
            update={
                "provider_options": options.updated(
                    plan_path=None, ledger_path=self.ledger_location
                ),
                "trace_dir": None,
            }
        )
        task = service_run_task().options(resources={slot_resource(config.runtime): 1})
        generator = task.remote(shipped, fixture, plan, self._board_name)
        node: str | None = None
        asked_at: float | None = None
        try:
            while True:
                ready, _ = ray.wait([generator], num_returns=1, timeout=POLL_S)
                if token.cancelled and asked_at is None:
                    asked_at = _now()
                    self._board.cancel.remote(str(config.run_id))
                if asked_at is not None and _now() - asked_at > STOP_WAIT_S:
                    ray.cancel(generator)
                if not ready:
                    continue
                message = _next(generator, node)
                if isinstance(message, Started):
                    node = node_name(message.ip, message.node_id)
                elif isinstance(message, Event):
                    if on_event is not None:
                        on_event(message.event)
                elif isinstance(message, Finished):
                    result = RunResult.model_validate_json(message.payload)
                    if config.run_id is not None and result.run_id != config.run_id:
                        raise UsageError(
                            f"the node sent back run {result.run_id} for run {config.run_id}"
                        )
                    trace_path = result.trace_path
                    if message.run_folder is not None and config.trace_dir is not None:
                        folder = unpack_run_folder(message.run_folder, config.trace_dir)
                        trace_path = str(folder / Path(result.trace_path).name)
                    return result.model_copy(update={"trace_path": trace_path, "node": node})
        finally:
            with contextlib.suppress(Exception):
                self._board.forget.remote(str(config.run_id))


def _now() -> float:
    import time

    return time.monotonic()


def _next(generator: Any, node: str | None) -> Any:
    """The run's next message, with Ray's errors turned into ours."""
    import ray

    try:
        return ray.get(next(generator))
    except StopIteration:
        raise InfrastructureError(f"the node {node} ended the run without a result") from None
    except (UsageError, SetupError):
        raise
    except ray.exceptions.TaskCancelledError:
        raise InfrastructureError("the run was cancelled before its node sent a result") from None
    except ray.exceptions.RayTaskError as error:
        cause = error.cause if error.cause is not None else error
        raise InfrastructureError(f"on node {node}: {type(cause).__name__}: {cause}") from None
    except ray.exceptions.RayError as error:
        raise InfrastructureError(
            f"lost with its node {node or '(not started yet)'} ({type(error).__name__})"
        ) from None


# What runs on the node.


def run_service_run(
    config: RunConfig, fixture: FolderCopy, plan: bytes | None, board: str
) -> Iterator[Message]:
    """One service run on this node, its trace events streamed back as they are written."""
    from sandbox_agent.controller import run_task

    yield started()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-node-") as scratch:
        root = Path(scratch)
        folder = place(fixture, root / "fixtures" / str(config.fixture))
        options = config.provider_options
        if plan is not None:
            (root / "plan.json").write_bytes(plan)
            options = options.updated(plan_path=str(root / "plan.json"))
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

        for item in in_thread(work, asked):
            if isinstance(item, Event):
                yield item
            else:
                result = item
        assert result is not None  # noqa: S101 - in_thread yields the result last
        yield Finished(
            payload=result.model_dump_json(), run_folder=pack_run_folder(result.trace_path)
        )


def _asked_to_cancel(board: str, run_id: str) -> bool:
    """Whether the service asked to cancel ``run_id`` (on its cancel board, an actor)."""
    import ray

    try:
        actor = ray.get_actor(board, namespace=NAMESPACE)
        return bool(ray.get(actor.cancelled.remote(run_id), timeout=10))
    except Exception:  # the service is gone: nobody is left to receive the result
        return True


@functools.cache
def service_run_task() -> Any:
    """``run_service_run`` as a Ray task."""
    return as_task(run_service_run)
