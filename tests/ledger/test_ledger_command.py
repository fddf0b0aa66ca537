"""`sandbox-agent ledger`: the summary, as text and JSON, and the explicit expiry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.cli import main
from sandbox_agent.ledger import PRICES_AS_OF, Ledger, SpendLimits

LIMITS = SpendLimits(max_cost_usd=1, experiment_budget_usd=2.5, max_calls=9, max_tokens=10**6)


def seeded(tmp_path: Path) -> Path:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    done = ledger.reserve(
        experiment="exp1", run_id="r1", model="m", micros=50_000, tokens=9, limits=LIMITS
    )
    ledger.settle(done, micros=20_000, input_tokens=5, output_tokens=4, outcome="ok")
    ledger.reserve(
        experiment="exp1", run_id="r2", model="m", micros=30_000, tokens=9, limits=LIMITS
    )
    return ledger.path


def test_json_shows_reserved_settled_and_remaining(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = seeded(tmp_path)

    assert main(["ledger", "--json", "--ledger", str(path)]) == 0

    document = json.loads(capsys.readouterr().out)
    assert document["prices_as_of"] == PRICES_AS_OF
    assert "estimate" in document["note"]
    (exp,) = document["experiments"]
    assert exp["experiment"] == "exp1"
    assert (exp["settled_usd"], exp["reserved_usd"]) == (0.02, 0.03)
    assert exp["remaining_usd"] == pytest.approx(2.45)
    assert (exp["open_reservations"], exp["runs"]) == (1, 2)


def test_text_says_costs_are_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = seeded(tmp_path)

    assert main(["ledger", "--ledger", str(path), "--experiment", "exp1"]) == 0

    out = capsys.readouterr().out
    assert f"estimates from the price table dated {PRICES_AS_OF}" in out
    assert "$2.4500" in out


def test_expire_stale_stops_counting_open_reservations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = seeded(tmp_path)

    assert (
        main(["ledger", "--json", "--ledger", str(path), "--expire-stale", "--older-than", "0"])
        == 0
    )

    document = json.loads(capsys.readouterr().out)
    assert document["expired"] == 1
    assert document["experiments"][0]["reserved_usd"] == 0


def test_a_negative_age_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "ledger",
        "--ledger",
        str(tmp_path / "l.sqlite3"),
        "--expire-stale",
        "--older-than",
        "-1",
    ]
    assert main(args) == 2
    assert "--older-than" in capsys.readouterr().err
