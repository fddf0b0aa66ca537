"""``eval --ray``'s scheduler: every run of an evaluation is a Ray task on a node with a
sandbox slot, and every fault of the cluster has an outcome.

Each (case, repeat) is one streaming task (``on_node.run_eval_case``) asking for one
``sandbox-slot-<runtime>``: the agent, the held-out check and the score run on that
node, with its own Docker daemon and runner image. Records, run folders and the node
that ran each run come back; records are returned in (case, repeat) order as locally.

Faults:
- a node lost mid-run (its process, its machine): the run ends ``LOST`` (never
  passed) and, with ``retry_lost``, runs once more wherever a slot is free; once the
  evaluation ends, every surviving node reaps what dead runs left on its Docker;
- the head lost: ``HeadLost`` with every record that finished (the caller keeps them);
- Ctrl-C: every task is cancelled (the node cancels its run, which removes its
  sandbox), the caller waits for them to end, then ``KeyboardInterrupt`` goes on.
"""

from __future__ import annotations

import re
import tarfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.cluster.connect import NAMESPACE, gcs_reachable
from sandbox_agent.cluster.node import slot_resource
from sandbox_agent.cluster.nodes import NodeInfo, node_name, reap_everywhere, slots_of
from sandbox_agent.cluster.remote import Finished, Started
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.evals.results.cluster_report import ClusterReport, cluster_report
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.running.progress import ProgressBar
from sandbox_agent.evals.running.replies import answered_record, harness_error, lost
from sandbox_agent.evals.tasks.cases import EvalCase

POLL_S = 0.5
NO_SLOT_AFTER_S = 30.0
"""Runs waiting this long while no alive node advertises a slot of their runtime (every
node with slots died or left) end ``LOST`` instead of waiting for ever."""
SLOT_CHECK_S = 5.0
"""How long the slot check waits for the head's answer (it takes milliseconds)."""
HEAD_LOST_AFTER_S = 3.0
"""The head's GCS refusing connections this long means the head is gone."""
CANCEL_WAIT_S = 90.0
"""After Ctrl-C, how long to wait for every node to unwind its runs (each has 60 s)."""

RecordSink = Callable[[RunRecord], None]
RAY_NODE = re.compile(r"Node IP: (?P<ip>[0-9a-fA-F.:]+), node ID: (?P<id>[0-9a-f]{16,})")
"""How Ray's ``NodeDiedError`` names the node (Ray 2.60)."""


class ClusterOptions(BaseModel):
    """How an evaluation uses the cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str
    """``--ray``: ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``."""
    retry_lost: bool = False
    """``--retry-lost``: run a run lost with its node once more, on another node."""


class HeadLost(SetupError):
    """The cluster's head went away mid-evaluation; ``records`` holds what finished."""

    def __init__(self, message: str, records: list[RunRecord], report: ClusterReport) -> None:
        super().__init__(message)
        self.records = records
        self.report = report


class ClusterEval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    records: list[RunRecord]
    report: ClusterReport


@dataclass
class Attempt:
    key: tuple[int, int]
    number: int
    started: Started | None = None
    node_hint: str | None = None
    """Where the run was, from Ray's error, when it was lost before ``Started`` came."""
    lost_on: list[str] = field(default_factory=list)


class Scheduler:
    """The driver's loop: submit every run, collect what comes back, handle faults."""

    def __init__(
        self,
        *,
        cases: Sequence[EvalCase],
        options: EvalOptions,
        cluster: ClusterOptions,
        address: str,
        nodes: list[NodeInfo],
        progress: ProgressBar | None,
        on_record: RecordSink | None,
    ) -> None:
        self.cases = cases
        self.options = options
        self.cluster = cluster
        self.address = address
        self.nodes = nodes
        self.progress = progress
        self.on_record = on_record
        self.records: dict[tuple[int, int], RunRecord] = {}
        self.pending: dict[Any, Attempt] = {}
        self.lost_attempts = 0
        self.retried = 0
        self.ledger_actor: Any = None
        self.streaming = not address.startswith("ray://")

    def all(self) -> ClusterEval:
        import ray

        from sandbox_agent.evals.running.on_node import bundle_case

        node_options = self._node_options()
        bundles = [ray.put(bundle_case(case)) for case in self.cases]
        work = [(i, r) for i in range(len(self.cases)) for r in range(self.options.repeats)]
        submit = self._submitter(bundles, node_options)
        for key in work:
            submit(Attempt(key=key, number=1))
        try:
            self._collect(submit)
        except HeadLost:
            raise
        except BaseException:
            self._cancel_all()
            raise
        if self.lost_attempts:  # every surviving node reaps what dead runs left
            reap_everywhere(CANCEL_WAIT_S)
        return ClusterEval(records=[self.records[key] for key in work], report=self._report())

    def _node_options(self) -> EvalOptions:
        """What every node is given: no trace folder of ours, and for a real model the
        cluster's ledger on the head instead of a file."""
        from sandbox_agent.ledger.actor import start_ledger_actor
        from sandbox_agent.providers.options import MeteredOptions

        options = self.options.model_copy(update={"trace_dir": None})
        metered = options.provider_options
        if not isinstance(metered, MeteredOptions):  # a simulated provider spends nothing
            return options
        self.ledger_actor, location = start_ledger_actor(metered.ledger_path, NAMESPACE)
        provider_options = metered.updated(ledger_path=location)
        return options.model_copy(update={"provider_options": provider_options})

    def _submitter(
        self, bundles: list[Any], node_options: EvalOptions
    ) -> Callable[[Attempt], None]:
        from sandbox_agent.evals.running.on_node import eval_case_task, whole_eval_case_task

        # Ray Client (ray://) cannot carry a streaming task: there each run is one task
        # whose messages all come back at its end.
        chosen = eval_case_task() if self.streaming else whole_eval_case_task()
        task = chosen.options(resources={slot_resource(self.options.runtime): 1})

        def submit(attempt: Attempt) -> None:
            index, repeat = attempt.key
            self.pending[task.remote(bundles[index], repeat, node_options)] = attempt

        return submit

    def _collect(self, submit: Callable[[Attempt], None]) -> None:
        import ray

        unreachable_since: float | None = None
        slotless_since: float | None = None
        next_slot_check = time.monotonic()
        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=POLL_S)
            if ready:  # then every other run with a message waiting, in the same pass
                ready, _ = ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
            for generator in ready:
                self._advance(generator, submit)
            if gcs_reachable(self.address):
                unreachable_since = None
            elif unreachable_since is None:
                unreachable_since = time.monotonic()
            elif time.monotonic() - unreachable_since >= HEAD_LOST_AFTER_S:
                self._head_lost()
            if unreachable_since is None and time.monotonic() >= next_slot_check:
                next_slot_check = time.monotonic() + 5 * POLL_S
                left = self._slots_left()
                if left is None:
                    continue  # the head did not answer: the reachability check decides
                if left:
                    slotless_since = None
                elif slotless_since is None:
                    slotless_since = time.monotonic()
                elif time.monotonic() - slotless_since >= NO_SLOT_AFTER_S:
                    self._no_slot_left()

    def _slots_left(self) -> bool | None:
        """Whether an alive node advertises a slot of the runtime; None when the head does
        not answer within ``SLOT_CHECK_S``. A head that dies just after the reachability
        check leaves ``ray.cluster_resources()`` blocked until Ray's own 60 s GCS time-out
        ends the whole driver (exit 1, no report: seen once in a clean-clone CI run), so
        the call runs in a thread of its own and is not waited for longer."""
        import ray

        answer: list[dict[str, float]] = []
        asked = threading.Thread(
            target=lambda: answer.append(ray.cluster_resources()),  # type: ignore[no-untyped-call]
            name="cluster-resources",
            daemon=True,
        )
        asked.start()
        asked.join(SLOT_CHECK_S)
        if not answer:
            return None
        return answer[0].get(slot_resource(self.options.runtime), 0) > 0

    def _no_slot_left(self) -> None:
        """End every waiting run ``LOST``: no alive node can take it any more."""
        import ray

        for generator, attempt in list(self.pending.items()):
            ray.cancel(generator)
            del self.pending[generator]
            reason = f"no node with a {self.options.runtime} slot is left in the cluster"
            record = lost(self._harness_error(attempt, reason), reason)
            self.lost_attempts += 1
            self._keep(attempt, record)

    def _advance(self, generator: Any, submit: Callable[[Attempt], None]) -> None:
        """Take the next message of one run, or its end."""
        import ray

        attempt = self.pending[generator]
        try:
            messages = self._take(generator)
        except StopIteration:
            del self.pending[generator]
            self._keep(attempt, self._harness_error(attempt, "the node sent no record"))
            return
        except (UsageError, SetupError):
            raise
        except ray.exceptions.RayTaskError as error:  # the run's code raised on the node
            del self.pending[generator]
            cause = error.cause if error.cause is not None else error
            self._keep(attempt, self._harness_error(attempt, f"{type(cause).__name__}: {cause}"))
            return
        except ray.exceptions.RayError as error:  # the node, its worker or its objects are gone
            del self.pending[generator]
            if attempt.started is None:
                attempt.node_hint = self._node_named_in(str(error))
            detail = " ".join(str(error).split())[:200]
            self._lost(attempt, f"{type(error).__name__}: {detail}", submit)
            return
        for message in messages:
            if isinstance(message, Started):
                attempt.started = message
                self._ensure_known(message.node_id, message.ip)
            elif isinstance(message, Finished):
                del self.pending[generator]
                try:
                    finished = self._finished(attempt, message)
                except (UsageError, ValueError, OSError, tarfile.TarError) as error:
                    # A node that sends back what no run of ours leaves (a record of
                    # another run, a folder over another's, a tar bomb) loses the run.
                    why = f"the node sent back an unusable run: {error}"
                    finished = self._harness_error(attempt, why)
                self._keep(attempt, finished)
        if generator in self.pending and not self.streaming:
            del self.pending[generator]
            self._keep(attempt, self._harness_error(attempt, "the node sent no record"))

    def _take(self, submitted: Any) -> list[Any]:
        """The next message of a streaming run, or every message of a whole one.

        Raises:
            StopIteration: a streaming run ended.
            RayError: the run's task failed (its node, its worker, its code).
        """
        import ray

        if self.streaming:
            return [ray.get(next(submitted))]
        messages: list[Any] = ray.get(submitted)
        return messages

    def _node_of(self, attempt: Attempt) -> str | None:
        started = attempt.started
        return node_name(started.ip, started.node_id) if started else attempt.node_hint

    def _ensure_known(self, node_id: str, ip: str) -> None:
        """A node that joined after the evaluation began is in its report too."""
        if all(node.node_id != node_id for node in self.nodes):
            import ray

            listed: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
            resources: dict[str, float] = next(
                (n.get("Resources", {}) for n in listed if n["NodeID"] == node_id), {}
            )
            self.nodes.append(NodeInfo(node_id=node_id, ip=ip, slots=slots_of(resources)))

    def _node_named_in(self, text: str) -> str | None:
        """The node Ray's error names (``Node IP: ..., node ID: ...``, else a known node's
        id or address): a run lost before its first message still says where it was."""
        named = RAY_NODE.search(text)
        if named is not None:
            self._ensure_known(named["id"], named["ip"])
            return node_name(named["ip"], named["id"])
        for node in self.nodes:
            if node.node_id in text:
                return node.name
        for node in self.nodes:
            if re.search(rf"(?<![\d.]){re.escape(node.ip)}(?![\d.])", text):
                return node.name
        return None

    def _finished(self, attempt: Attempt, message: Finished) -> RunRecord:
        index, repeat = attempt.key
        record = answered_record(message, self.cases[index], repeat, self.options.trace_dir)
        return record.model_copy(
            update={"node": self._node_of(attempt), "lost_on": attempt.lost_on}
        )

    def _harness_error(self, attempt: Attempt, error: str) -> RunRecord:
        index, repeat = attempt.key
        record = harness_error(self.cases[index], repeat, self.options, error)
        return record.model_copy(
            update={"node": self._node_of(attempt), "lost_on": attempt.lost_on}
        )

    def _lost(self, attempt: Attempt, why: str, submit: Callable[[Attempt], None]) -> None:
        self.lost_attempts += 1
        node = self._node_of(attempt) or "an unknown node"
        if self.cluster.retry_lost and attempt.number == 1:
            self.retried += 1
            submit(Attempt(key=attempt.key, number=2, lost_on=[*attempt.lost_on, node]))
            return
        reason = f"lost with its node {node} ({why}) before it finished"
        self._keep(attempt, lost(self._harness_error(attempt, reason), reason))

    def _keep(self, attempt: Attempt, record: RunRecord) -> None:
        self.records[attempt.key] = record
        if self.on_record is not None:
            self.on_record(record)
        if self.progress is not None:
            self.progress.advance(record.passed)

    def _cancel_all(self) -> None:
        """Cancel every run in flight and wait (bounded) until each node has unwound it."""
        import ray

        for generator in self.pending:
            ray.cancel(generator)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while self.pending and time.monotonic() < deadline:
            ready: list[Any] = ray.wait(list(self.pending), num_returns=1, timeout=POLL_S)[0]
            for generator in ready:
                try:
                    messages = self._take(generator)
                except (StopIteration, ray.exceptions.RayError, SetupError, UsageError):
                    del self.pending[generator]
                    continue
                if not self.streaming or any(isinstance(m, Finished) for m in messages):
                    del self.pending[generator]

    def _head_lost(self) -> None:
        unfinished = len(self.pending)
        message = (
            f"the cluster's head at {self.address} was lost: {len(self.records)} runs "
            f"finished and are kept, {unfinished} did not finish"
        )
        report = self._report(error=message, unfinished=unfinished)
        records = [self.records[key] for key in sorted(self.records)]
        raise HeadLost(message, records, report)

    def _report(self, *, error: str | None = None, unfinished: int = 0) -> ClusterReport:
        return cluster_report(
            address=self.address,
            nodes=self.nodes,
            records=list(self.records.values()),
            retry_lost=self.cluster.retry_lost,
            lost_runs=self.lost_attempts,
            retried_runs=self.retried,
            error=error,
            unfinished=unfinished,
        )
