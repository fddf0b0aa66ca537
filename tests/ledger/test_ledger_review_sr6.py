"""SR-6: the spend ledger and meter against odd figures and crashes (each test written first)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from sandbox_agent.errors import BudgetExhausted
from sandbox_agent.ledger.store import Ledger, SpendLimits
from sandbox_agent.providers.meter import MAX_REPORTED_TOKENS, token_counts

LIMITS = SpendLimits(max_cost_usd=1.0, experiment_budget_usd=1.0, max_calls=10, max_tokens=10**6)


@pytest.mark.parametrize("field", ["max_cost_usd", "experiment_budget_usd"])
@pytest.mark.parametrize("value", [math.inf, -1.0, math.nan])
def test_f10_a_budget_that_is_no_number_is_a_usage_error(
    field: str, value: float, capsys: pytest.CaptureFixture[str]
) -> None:
    """SR-6 F10: ``--max-cost-usd inf`` passed ``ge=0`` and crashed ``reserve`` with an
    OverflowError; -1 and NaN crashed with a pydantic ValidationError (a traceback, exit 1).
    Now the options refuse them when they are made, and the CLI says so in one line."""
    from sandbox_agent.cli import main

    flag = "--" + field.replace("_", "-")
    argv = ["run", "--fixture", "paginator", "--task", "t", "--provider", "openai"]
    assert main([*argv, flag, str(value)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error
    assert field in error or flag in error


@pytest.mark.parametrize(
    "counts", [(-1, 5), (5, -1), (MAX_REPORTED_TOKENS + 1, 0), (10**400, 1), (True, 1), (1.5, 1)]
)
def test_f4_impossible_counts_are_no_counts(counts: tuple[object, object]) -> None:
    assert token_counts(*counts) is None


# Probes that hold -------------------------------------------------------------------


def test_holds_a_negative_amount_never_enters_the_ledger(tmp_path: Path) -> None:
    """The schema's CHECKs refuse a negative reservation or cost, whoever writes it."""
    ledger = Ledger(tmp_path / "l.sqlite3")
    with pytest.raises(sqlite3.IntegrityError):
        ledger.reserve(experiment="e", run_id="r", model="m", micros=-5, tokens=1, limits=LIMITS)
    reservation = ledger.reserve(
        experiment="e", run_id="r", model="m", micros=5, tokens=1, limits=LIMITS
    )
    with pytest.raises(sqlite3.IntegrityError):
        ledger.settle(reservation, micros=-5, input_tokens=0, output_tokens=0, outcome="ok")
    (summary,) = ledger.summary()
    assert summary.reserved_usd == 5 / 1e6  # the failed settle left the reservation counting


def test_holds_an_unsettled_reservation_keeps_counting_after_a_crash(tmp_path: Path) -> None:
    """A run killed between reserve and settle cannot free its reservation by dying."""
    path = tmp_path / "l.sqlite3"
    Ledger(path).reserve(
        experiment="e", run_id="r", model="m", micros=900_000, tokens=1, limits=LIMITS
    )
    with pytest.raises(BudgetExhausted):
        Ledger(path).reserve(
            experiment="e", run_id="r2", model="m", micros=200_000, tokens=1, limits=LIMITS
        )
