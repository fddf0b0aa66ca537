"""The ledger's budgets, settling, expiry and summary."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sandbox_agent.errors import BudgetExhausted, UsageError
from sandbox_agent.ledger import Ledger, Reservation, SpendLimits

LIMITS = SpendLimits(max_cost_usd=0.01, experiment_budget_usd=1.0, max_calls=3, max_tokens=1000)


def reserve(ledger: Ledger, micros: int = 1000, tokens: int = 10, run: str = "r") -> Reservation:
    return ledger.reserve(
        experiment="e", run_id=run, model="m", micros=micros, tokens=tokens, limits=LIMITS
    )


def test_the_file_is_sqlite_in_wal_mode(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    with sqlite3.connect(ledger.path) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


@pytest.mark.parametrize(
    ("micros", "tokens", "granted", "budget"),
    [(4_000, 10, 2, "cost"), (1, 600, 1, "tokens"), (1, 1, 3, "calls")],
)
def test_each_run_budget_refuses_the_request_that_would_pass_it(
    tmp_path: Path, micros: int, tokens: int, granted: int, budget: str
) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    for _ in range(granted):
        reserve(ledger, micros, tokens)

    with pytest.raises(BudgetExhausted) as refused:
        reserve(ledger, micros, tokens)

    assert refused.value.budget == budget
    assert reserve(ledger, micros, tokens, run="another run")  # per run, not per ledger


def test_settling_replaces_the_reservation_by_the_real_cost(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    reservation = ledger.reserve(
        experiment="e", run_id="r", model="m", micros=9_000, tokens=10, limits=LIMITS
    )
    with pytest.raises(BudgetExhausted):
        reserve(ledger, micros=2_000)

    ledger.settle(reservation, micros=1_500, input_tokens=5, output_tokens=5, outcome="ok")

    reserve(ledger, micros=2_000)  # fits now
    (spend,) = ledger.summary()
    assert (spend.settled_usd, spend.reserved_usd, spend.open_reservations) == (0.0015, 0.002, 1)
    assert spend.remaining_usd == pytest.approx(1.0 - 0.0035)


def test_open_reservations_count_until_expired(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    left_open = reserve(ledger, micros=9_000)  # an interrupted run never settles this

    assert ledger.expire_stale(older_than_seconds=3600) == 0
    with pytest.raises(BudgetExhausted):
        reserve(ledger, micros=2_000)

    assert ledger.expire_stale(older_than_seconds=0) == 1
    reserve(ledger, micros=2_000)
    # A late settle still records the real cost.
    ledger.settle(left_open, micros=100, input_tokens=1, output_tokens=1, outcome="ok")
    (spend,) = ledger.summary()
    assert spend.settled_usd == pytest.approx(0.0001)


def test_summary_per_experiment(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    reserve(ledger)
    ledger.reserve(experiment="other", run_id="x", model="m", micros=5, tokens=1, limits=LIMITS)

    assert [s.experiment for s in ledger.summary()] == ["e", "other"]
    (only,) = ledger.summary("other")
    assert (only.reserved_usd, only.runs, only.budget_usd) == (5e-6, 1, 1.0)
    assert ledger.summary("missing") == []


def test_a_file_that_is_not_a_ledger_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database " * 100)

    with pytest.raises(UsageError, match="--ledger PATH"):
        Ledger(path)
