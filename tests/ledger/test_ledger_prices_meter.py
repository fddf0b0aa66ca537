"""The dated price table, the input estimate and the retry backoff."""

from __future__ import annotations

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.ledger import PRICES_AS_OF, Price, cost_micros, price_for
from sandbox_agent.providers.meter import (
    BACKOFF_CAP_SECONDS,
    MAX_RETRY_AFTER_SECONDS,
    Meter,
    estimate_input_tokens,
    status_failure,
)


def test_the_table_is_dated() -> None:
    assert PRICES_AS_OF.startswith("20")


@pytest.mark.parametrize(
    "model", ["claude-haiku-4-5", "claude-haiku-4-5-20251001", "gpt-4o-latest"]
)
def test_known_models_and_their_dated_names_are_priced(model: str) -> None:
    assert price_for(model).input_per_mtok > 0


def test_an_unknown_variant_is_not_priced_as_a_sibling() -> None:
    with pytest.raises(UsageError, match="--price-per-mtok-in and --price-per-mtok-out"):
        price_for("gpt-4o-mini-turbo-preview")


def test_explicit_prices_win_and_free_local_models_are_allowed() -> None:
    assert price_for("llama3:8b", input_per_mtok=0, output_per_mtok=0) == Price(0, 0)
    assert price_for("gpt-4o", output_per_mtok=1) == Price(2.5, 1)
    with pytest.raises(UsageError, match=">= 0"):
        price_for("gpt-4o", input_per_mtok=-1)


def test_costs_round_up() -> None:
    assert cost_micros(Price(3, 15), 1_000, 100) == 4_500
    assert cost_micros(Price(0.1, 0), 1, 0) == 1


def test_the_input_estimate_is_conservative_for_text() -> None:
    text = "def paginate(items, size):\n    return [items[i:i + size]]\n" * 200
    # Roughly 4 bytes per token for code; the estimate assumes 3, plus an overhead.
    assert estimate_input_tokens({"messages": [text]}) > len(text) / 3


def test_backoff_grows_is_capped_and_honours_retry_after() -> None:
    meter = Meter.__new__(Meter)
    meter.jitter = lambda: 1.0
    assert [meter.backoff(n, None) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert meter.backoff(20, None) == BACKOFF_CAP_SECONDS
    assert meter.backoff(1, 7.0) == 7.0
    assert meter.backoff(1, 10_000.0) == MAX_RETRY_AFTER_SECONDS


def test_status_failures_keep_the_type_and_the_redacted_message_on_one_line() -> None:
    key = "sk-proj-" + "Ab3" * 10
    body = {"error": {"type": "rate_limit_error", "message": f"key {key}\nwas slow"}}
    failure = status_failure(429, {"retry-after-ms": "250"}, body, key_env="K")
    assert (failure.retryable, failure.retry_after, failure.detail) == (
        True,
        0.25,
        "HTTP 429 rate_limit_error: key [REDACTED] was slow",
    )
    odd = status_failure(400, {}, {"error": {"type": "Bad Thing sk-x"}}, key_env="K")
    assert (odd.retryable, odd.detail) == (False, "HTTP 400")
    long = status_failure(401, {}, {"error": {"message": "x" * 5000}}, key_env="K")
    assert long.error is not None
    assert len(long.error.message) <= 300
    assert long.error.message.endswith("(check K)")
