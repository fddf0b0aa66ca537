"""The real-model flags ``run`` and ``eval`` share (docs/CLI.md), parsed once."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox_agent.providers.options import ProviderOptions

TOOL_PROTOCOLS = ("tools", "required", "json_schema", "text")
"""Kept literal so that building the parser imports nothing heavy (``chat_protocol``)."""

# The spend defaults, kept literal for the same reason; a test checks they equal
# ``sandbox_agent.providers.options``' named defaults.
DEFAULT_MAX_COST_USD = 1.00
DEFAULT_EXPERIMENT_BUDGET_USD = 10.00
DEFAULT_MAX_CALLS = 60
DEFAULT_MAX_TOKENS = 2_000_000
DEFAULT_EXPERIMENT = "default"


def add_real_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--base-url``, prices, cost caps, ledger and request budgets."""
    real = parser.add_argument_group("real models (docs/MODELS.md)")
    real.add_argument(
        "--model",
        help="the model name (default: none; required with anthropic and openai; local "
        "serves its own)",
    )
    real.add_argument(
        "--base-url",
        help="openai or anthropic: the API's address, a local server's too (default: the "
        "provider's official API)",
    )
    real.add_argument(
        "--max-cost-usd",
        type=float,
        metavar="X",
        help=f"estimated spend cap of this run (default {DEFAULT_MAX_COST_USD:g})",
    )
    real.add_argument(
        "--experiment-budget-usd",
        type=float,
        metavar="X",
        help=f"estimated spend cap of the experiment, all its runs (default "
        f"{DEFAULT_EXPERIMENT_BUDGET_USD:g})",
    )
    real.add_argument(
        "--price-per-mtok-in",
        type=float,
        metavar="X",
        help="USD per 1M tokens in (default: the model's row of the dated price table)",
    )
    real.add_argument(
        "--price-per-mtok-out",
        type=float,
        metavar="X",
        help="USD per 1M tokens out (default: the model's row of the dated price table)",
    )
    real.add_argument(
        "--ledger",
        metavar="PATH",
        help="the spend ledger, SQLite (default: ledger.sqlite3 in the state folder)",
    )
    real.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help=f"model requests of this run, retries included (default {DEFAULT_MAX_CALLS})",
    )
    real.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help=f"tokens of this run, in + out (default {DEFAULT_MAX_TOKENS})",
    )
    real.add_argument(
        "--experiment",
        default=DEFAULT_EXPERIMENT,
        metavar="NAME",
        help=f"ledger experiment to charge (default {DEFAULT_EXPERIMENT})",
    )
    real.add_argument(
        "--tool-protocol",
        choices=TOOL_PROTOCOLS,
        help="openai and local: how a tool call is asked for (default: required for the "
        "official API, json_schema for local, tools for other servers; docs/MODELS.md)",
    )
    real.add_argument(
        "--request-timeout",
        type=float,
        metavar="S",
        help="one model request's whole time, retried when cut (default 120 s, local 300 s; "
        "a model on a busy CPU needs more)",
    )


FLAG_OF_FIELD: dict[str, str] = {
    "model": "--model",
    "base_url": "--base-url",
    "max_cost_usd": "--max-cost-usd",
    "experiment_budget_usd": "--experiment-budget-usd",
    "price_per_mtok_in": "--price-per-mtok-in",
    "price_per_mtok_out": "--price-per-mtok-out",
    "ledger_path": "--ledger",
    "max_calls": "--max-calls",
    "max_tokens": "--max-tokens",
    "experiment": "--experiment",
    "tool_protocol": "--tool-protocol",
    "request_timeout_seconds": "--request-timeout",
    "plan_path": "--plan",
}
"""The flag that sets each options field, for the one-line error."""


def provider_options_from(args: argparse.Namespace, *, plan_path: str | None) -> ProviderOptions:
    """The options of ``--provider`` from these flags: the variant of its kind
    (``providers.options_for``); a flag that kind does not use is left out, its value
    still checked.

    Raises:
        UsageError: an unknown provider, or a value out of range (one line naming the flag).
    """
    from pydantic import ValidationError

    from sandbox_agent.errors import UsageError
    from sandbox_agent.providers import options_for

    try:
        return options_for(
            args.provider,
            plan_path=plan_path,
            model=args.model,
            base_url=args.base_url,
            max_cost_usd=args.max_cost_usd,
            experiment_budget_usd=args.experiment_budget_usd,
            price_per_mtok_in=args.price_per_mtok_in,
            price_per_mtok_out=args.price_per_mtok_out,
            ledger_path=args.ledger,
            max_calls=args.max_calls,
            max_tokens=args.max_tokens,
            experiment=args.experiment,
            tool_protocol=args.tool_protocol,
            request_timeout_seconds=args.request_timeout,
        )
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        field = str(problem["loc"][-1]) if problem["loc"] else ""
        flag = FLAG_OF_FIELD.get(field, field)
        raise UsageError(f"{flag}: {problem['msg']} (see --help)") from None
