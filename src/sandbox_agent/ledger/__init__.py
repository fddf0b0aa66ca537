"""The spend ledger: reserve each model request's worst case before sending it, settle after.

Public entry points::

    from sandbox_agent.ledger import Ledger, SpendLimits, price_for, PRICES_AS_OF
"""

from __future__ import annotations

from sandbox_agent.ledger.opening import open_ledger
from sandbox_agent.ledger.prices import PRICES, PRICES_AS_OF, Price, cost_micros, price_for
from sandbox_agent.ledger.store import (
    ExperimentSpend,
    Ledger,
    Reservation,
    SpendLedger,
    SpendLimits,
    default_ledger_path,
)

__all__ = [
    "PRICES",
    "PRICES_AS_OF",
    "ExperimentSpend",
    "Ledger",
    "Price",
    "Reservation",
    "SpendLedger",
    "SpendLimits",
    "cost_micros",
    "default_ledger_path",
    "open_ledger",
    "price_for",
]
