"""The one dated price table: list prices in USD per million tokens, for cost estimates.

Every cost this project shows is an estimate computed from this table (or from the
``--price-per-mtok-in/out`` flags), never a figure read from a bill. Update the table
and ``PRICES_AS_OF`` together. A model matches an entry by its exact name, or its
name followed by a date or ``-latest`` suffix; anything else needs explicit prices, so
an unknown variant is never silently priced as a cheaper sibling.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from sandbox_agent.errors import UsageError

PRICES_AS_OF = "2026-12-01"
"""When the table was last checked (see the comment on each group of rows)."""


class Price(NamedTuple):
    """List price of one model, USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float


PRICES: dict[str, Price] = {
    # Anthropic: checked against the model pages of platform.claude.com on PRICES_AS_OF.
    "claude-fable-5-1": Price(10.00, 50.00),
    "claude-opus-5-5": Price(4.00, 20.00),
    "claude-opus-5": Price(5.00, 25.00),
    "claude-sonnet-5-5": Price(2.00, 10.00),
    "claude-sonnet-5": Price(2.00, 10.00),
    "claude-opus-4-6": Price(5.00, 25.00),
    "claude-opus-4-5": Price(5.00, 25.00),
    "claude-opus-4-1": Price(15.00, 75.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-sonnet-4-6": Price(3.00, 15.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    # OpenAI: list prices as published when each model launched; not re-checked on
    # PRICES_AS_OF. Newer models need --price-per-mtok-in/out.
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.00, 8.00),
    "o3-pro": Price(20.00, 80.00),
    "o4-mini": Price(1.10, 4.40),
}

_VERSION_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)\Z")


def price_for(
    model: str, *, input_per_mtok: float | None = None, output_per_mtok: float | None = None
) -> Price:
    """The price used to estimate ``model``'s cost: explicit prices first, then the table.

    Args:
        model: the model name as sent to the API.
        input_per_mtok: ``--price-per-mtok-in``, overriding the table.
        output_per_mtok: ``--price-per-mtok-out``, overriding the table.

    Raises:
        UsageError: a price is negative, or the model is not in the table and a price is missing.
    """
    for flag, value in (("in", input_per_mtok), ("out", output_per_mtok)):
        if value is not None and not 0 <= value < math.inf:
            raise UsageError(f"--price-per-mtok-{flag} must be a finite number >= 0, not {value}")
    known = PRICES.get(_VERSION_SUFFIX.sub("", model))
    if input_per_mtok is not None and output_per_mtok is not None:
        return Price(input_per_mtok, output_per_mtok)
    if known is None:
        raise UsageError(
            f"no price known for model {model!r} (table as of {PRICES_AS_OF}): "
            "give --price-per-mtok-in and --price-per-mtok-out (0 for a free local model)"
        )
    return Price(
        known.input_per_mtok if input_per_mtok is None else input_per_mtok,
        known.output_per_mtok if output_per_mtok is None else output_per_mtok,
    )


def cost_micros(price: Price, input_tokens: int, output_tokens: int) -> int:
    """Estimated cost in micro-dollars (1e-6 USD), rounded up so that estimates never undershoot."""
    # A price in USD per million tokens is the same number in micro-dollars per token.
    return math.ceil(input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok)
