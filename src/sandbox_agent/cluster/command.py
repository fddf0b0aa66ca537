"""The ``eval --ray`` branch of ``sandbox-agent eval``: records kept as they come, node
keys written beside the report, a lost head turned into a partial report."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from sandbox_agent.cluster.evals import ClusterEval, ClusterOptions, HeadLost, run_all_ray
from sandbox_agent.cluster.report import ClusterReport
from sandbox_agent.evals.cases import EvalCase
from sandbox_agent.evals.executor import EvalOptions
from sandbox_agent.evals.progress import ProgressBar
from sandbox_agent.evals.records import RunRecord

RUNS_SO_FAR = "runs.jsonl"
"""One record per line, appended as each run comes back (kept whatever happens next)."""


def run_on_cluster(
    args: argparse.Namespace,
    cases: Sequence[EvalCase],
    options: EvalOptions,
    results: Path,
    progress: ProgressBar,
) -> ClusterEval:
    """Run the evaluation on the cluster ``args.ray``; a lost head ends it early, with
    every finished record kept and ``report.error`` set.

    Raises:
        SetupError: no cluster answers, or no node can run the runtime.
        UsageError: a case cannot run.
    """
    results.mkdir(parents=True, exist_ok=True)
    so_far = results / RUNS_SO_FAR
    so_far.write_text("", encoding="utf-8")

    def keep(record: RunRecord) -> None:
        with so_far.open("a", encoding="utf-8") as handle:
            handle.write(record.model_dump_json() + "\n")

    cluster = ClusterOptions(address=args.ray, retry_lost=args.retry_lost)
    try:
        outcome = run_all_ray(cases, options, cluster, progress=progress, on_record=keep)
    except HeadLost as lost:
        outcome = ClusterEval(records=lost.records, report=lost.report)
    write_node_keys(outcome.report, results / "nodes")
    return outcome


def write_node_keys(report: ClusterReport, folder: Path) -> None:
    """``<ip>-<node id>.pub`` per node: ``sandbox-agent verify --public-key`` for its runs."""
    folder.mkdir(parents=True, exist_ok=True)
    for node in report.nodes:
        if node.public_key_pem:
            name = node.node.replace("/", "-")
            (folder / f"{name}.pub").write_text(node.public_key_pem, encoding="utf-8")
