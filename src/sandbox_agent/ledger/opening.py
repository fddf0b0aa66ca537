"""Which ledger a run's ``ledger_path`` names: a file, or the cluster's actor."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.ledger.actor import ClusterLedger
from sandbox_agent.ledger.store import CLUSTER_LEDGER_PREFIX, Ledger, SpendLedger


def open_ledger(location: str | None) -> SpendLedger:
    """The ledger a run's ``ledger_path`` names: a file (the default one when None), or
    ``ray-actor:<name>``, the cluster's ledger on its head (``ledger.actor``).

    Raises:
        UsageError: the file cannot be opened or is not a ledger.
    """
    if location is not None and location.startswith(CLUSTER_LEDGER_PREFIX):
        return ClusterLedger(location.removeprefix(CLUSTER_LEDGER_PREFIX))
    return Ledger(Path(location) if location else None)
