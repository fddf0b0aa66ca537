"""Worker for the multi-process ledger test (importable by ``spawn`` children)."""

from __future__ import annotations

import random
from pathlib import Path

from sandbox_agent.errors import BudgetExhausted
from sandbox_agent.ledger import Ledger, SpendLimits

UNIT_MICROS = 1_000
LIMITS = SpendLimits(
    max_cost_usd=1_000.0, experiment_budget_usd=0.05, max_calls=10_000, max_tokens=10**9
)
"""The experiment budget holds exactly 50 reservations of UNIT_MICROS."""


def hammer(path: str, worker: int, seed: int) -> int:
    """Reserve until refused, settling most at full cost and leaving some open; return the count."""
    ledger = Ledger(Path(path))
    rng = random.Random(seed)
    granted = 0
    while True:
        try:
            reservation = ledger.reserve(
                experiment="shared",
                run_id=f"run-{worker}",
                model="m",
                micros=UNIT_MICROS,
                tokens=1,
                limits=LIMITS,
            )
        except BudgetExhausted:
            return granted
        granted += 1
        if rng.random() < 0.8:  # the rest stay open, like reservations of crashed runs
            ledger.settle(
                reservation, micros=UNIT_MICROS, input_tokens=1, output_tokens=0, outcome="ok"
            )
