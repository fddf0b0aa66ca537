"""The cluster's part of an eval report: which nodes took part, which were left out and
why, what was lost, and whether the head was lost before the end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
