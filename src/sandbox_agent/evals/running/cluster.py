"""The ``eval --ray`` branch of ``sandbox-agent eval``: records kept as they come, node
keys written beside the report, a lost head turned into a partial report."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from sandbox_agent.cluster.evals import ClusterEval, ClusterOptions, HeadLost, run_all_ray
from sandbox_agent.cluster.report import ClusterReport
from sandbox_agent.evals.results.journal import NODE_KEYS_DIR, Journal
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.running.executor import EvalOptions
from sandbox_agent.evals.running.progress import ProgressBar
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
