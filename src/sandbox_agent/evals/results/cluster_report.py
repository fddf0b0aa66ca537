"""The cluster's part of an eval report: which nodes took part, which were left out and
why, what was lost, and whether the head was lost before the end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.cluster.nodes import NodeInfo
from sandbox_agent.evals.results.records import RunRecord

LOST = "LOST"
"""The status of a run whose node was lost before it finished: never passed."""


class NodeReport(BaseModel):
    """One node of the cluster, as the evaluation found it."""

    model_config = ConfigDict(extra="forbid")

    node: str
    """``ip/node id``: what run records name in ``node``."""
    hostname: str = ""
    slots: dict[str, float] = Field(default_factory=dict)
    used: bool
    """False: the node was given no run (``problem`` says why)."""
    problem: str = ""
    signer: str = ""
    """Fingerprint of the key that signs this node's runs."""
    public_key_pem: str = ""
    """That key's public half, also written to ``<results>/nodes/`` for ``verify --public-key``."""
    runs: int = 0
    """Runs this node finished (or lost)."""
    lost: int = 0


class ClusterReport(BaseModel):
    """``report.json``'s ``cluster`` section (``eval --ray``)."""

    model_config = ConfigDict(extra="forbid")

    address: str
    nodes: list[NodeReport]
    retry_lost: bool
    """``--retry-lost``: a run lost with its node was run once more on another node."""
    lost_runs: int = 0
    """Attempts lost with their node (retried or not)."""
    retried_runs: int = 0
    error: str | None = None
    """Why the evaluation ended early (the head was lost); the runs that finished are kept."""
    unfinished: int = 0
    """Runs that never finished because of ``error``."""


def cluster_report(
    *,
    address: str,
    nodes: Sequence[NodeInfo],
    records: Sequence[RunRecord],
    retry_lost: bool,
    lost_runs: int,
    retried_runs: int,
    error: str | None = None,
    unfinished: int = 0,
) -> ClusterReport:
    """The report of an evaluation on the cluster at ``address``: every node as described,
    with the runs each finished and lost (a run lost and retried counts where it was lost)."""
    runs: dict[str, int] = {}
    lost: dict[str, int] = {}
    for record in records:
        if record.node:
            runs[record.node] = runs.get(record.node, 0) + 1
            if record.status == LOST:
                lost[record.node] = lost.get(record.node, 0) + 1
        for name in record.lost_on:
            lost[name] = lost.get(name, 0) + 1
    return ClusterReport(
        address=address,
        nodes=[
            NodeReport(
                node=node.name,
                hostname=node.hostname,
                slots=node.slots,
                used=not node.problem,
                problem=node.problem,
                signer=node.signer,
                public_key_pem=node.public_key_pem,
                runs=runs.get(node.name, 0),
                lost=lost.get(node.name, 0),
            )
            for node in nodes
        ],
        retry_lost=retry_lost,
        lost_runs=lost_runs,
        retried_runs=retried_runs,
        error=error,
        unfinished=unfinished,
    )


def markdown(report: ClusterReport, row: Callable[[list[Any]], str]) -> list[str]:
    """The report's "Cluster" section; ``row`` renders one table row with every cell
    made inert (``evals.results.report``)."""
    lines = [
        "",
        "## Cluster",
        "",
        row(
            [
                f"address {report.address}; lost attempts {report.lost_runs}, retried "
                f"{report.retried_runs} (--retry-lost {'on' if report.retry_lost else 'off'})"
            ]
        ).strip("| "),
    ]
    if report.error:
        lines.append(row([f"ended early: {report.error} ({report.unfinished} runs unfinished)"]))
    lines += ["", row(["node", "host", "slots", "runs", "lost", "problem"]), row(["---"] * 6)]
    for node in report.nodes:
        slots = ", ".join(f"{name} {count:g}" for name, count in sorted(node.slots.items()))
        lines.append(
            row([node.node, node.hostname, slots or "-", node.runs, node.lost, node.problem or "-"])
        )
    return lines
