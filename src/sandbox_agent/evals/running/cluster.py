"""``eval --ray``: an evaluation's runs on a Ray cluster, as ``sandbox-agent eval`` runs it.

``run_on_cluster`` keeps each record as it comes (in the journal), writes each node's
public key beside the report (``verify --public-key`` for its runs), and turns a lost
head into a partial report; ``run_all_ray`` joins the cluster, finds the nodes that can
take runs and hands them to the ``Scheduler``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from sandbox_agent.cluster.connect import connected
from sandbox_agent.cluster.nodes import describe_nodes
from sandbox_agent.errors import SetupError
from sandbox_agent.evals.results.cluster_report import ClusterReport
from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.journal_check import NODE_KEYS_DIR
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.running.progress import ProgressBar
from sandbox_agent.evals.running.scheduler import (
    ClusterEval,
    ClusterOptions,
    HeadLost,
    RecordSink,
    Scheduler,
)
from sandbox_agent.evals.tasks.cases import EvalCase


def run_on_cluster(
    args: argparse.Namespace,
    cases: Sequence[EvalCase],
    options: EvalOptions,
    journal: Journal,
    progress: ProgressBar,
) -> ClusterEval:
    """Run the evaluation on the cluster ``args.ray``; a lost head ends it early, with
    every finished record kept (in ``journal``, as each comes back) and ``report.error`` set.

    Raises:
        SetupError: no cluster answers, or no node can run the runtime.
        UsageError: a case cannot run.
    """
    by_task = {(case.task.id, case.task.version): case for case in cases}
    for case in cases:  # the inputs as they are before any run starts (SR-11 R1)
        journal.inputs(case)

    def keep(record: RunRecord) -> None:
        journal.append(by_task[record.task_id, record.task_version], record)

    cluster = ClusterOptions(address=args.ray, retry_lost=args.retry_lost)
    try:
        outcome = run_all_ray(cases, options, cluster, progress=progress, on_record=keep)
    except HeadLost as lost:
        outcome = ClusterEval(records=lost.records, report=lost.report)
    write_node_keys(outcome.report, journal.path.parent / NODE_KEYS_DIR)
    return outcome


def write_node_keys(report: ClusterReport, folder: Path) -> None:
    """``<ip>-<node id>.pub`` per node: ``sandbox-agent verify --public-key`` for its runs."""
    folder.mkdir(parents=True, exist_ok=True)
    for node in report.nodes:
        if node.public_key_pem:
            name = node.node.replace("/", "-")
            (folder / f"{name}.pub").write_text(node.public_key_pem, encoding="utf-8")


def run_all_ray(
    cases: Sequence[EvalCase],
    options: EvalOptions,
    cluster: ClusterOptions,
    *,
    progress: ProgressBar | None = None,
    on_record: RecordSink | None = None,
) -> ClusterEval:
    """Run every case ``options.repeats`` times on the cluster at ``cluster.address``.

    Args:
        on_record: called with each record as it comes back (the caller keeps it at
            once, so a head lost later loses nothing that finished).

    Raises:
        SetupError: no cluster answers, or no node advertises slots for the runtime.
        HeadLost: the head went away; what finished is in the exception.
        UsageError: a case cannot run (raised on a node).
    """
    with connected(cluster.address) as target:
        nodes = describe_nodes(options.runtime)
        usable = [node for node in nodes if not node.problem]
        if not usable:
            found = "; ".join(f"{node.name}: {node.problem}" for node in nodes) or "no nodes"
            raise SetupError(
                f"no node of the cluster at {target.address} can run {options.runtime} "
                f"sandboxes ({found}): start nodes with 'sandbox-agent cluster node'"
            )
        run = Scheduler(
            cases=cases,
            options=options,
            cluster=cluster,
            address=target.address,
            nodes=nodes,
            progress=progress,
            on_record=on_record,
        )
        try:
            return run.all()
        finally:
            if progress is not None:
                progress.close()
