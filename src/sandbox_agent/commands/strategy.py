"""``--strategy`` and the ``repair`` strategy's flags, shared by ``run`` and ``eval``."""

from __future__ import annotations

import argparse

from sandbox_agent.controller.models import (
    DEFAULT_CANDIDATE_TOKENS,
    DEFAULT_CANDIDATES,
    DEFAULT_FEEDBACK,
    DEFAULT_FOCUS,
    DEFAULT_MODULE_CHECKS,
    DEFAULT_REDRAWS,
    DEFAULT_ROUND_CANDIDATES,
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    DEFAULT_TEMPERATURE,
    FEEDBACKS,
    FOCUSES,
    STRATEGIES,
    RepairOptions,
    Strategy,
    default_strategy,
)


def add_strategy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--strategy`` and the repair strategy's limits."""
    group = parser.add_argument_group("strategy (docs/STRATEGIES.md)")
    group.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=None,
        help="tools: the model drives six tools; repair: the controller localises, the model "
        "writes whole functions, each checked in a sandbox (default: repair for --provider "
        "local, tools otherwise)",
    )
    group.add_argument(
        "--candidates",
        type=int,
        default=DEFAULT_CANDIDATES,
        metavar="N",
        help=f"repair: first-round candidates, greedy then sampled (default {DEFAULT_CANDIDATES})",
    )
    group.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="R",
        help=f"repair: rounds with the best failing candidate's failure (default {DEFAULT_ROUNDS})",
    )
    group.add_argument(
        "--round-candidates",
        type=int,
        default=DEFAULT_ROUND_CANDIDATES,
        metavar="M",
        help=f"repair: candidates per later round, sampled (default {DEFAULT_ROUND_CANDIDATES})",
    )
    group.add_argument(
        "--temperature",
        type=float,
        default=DEFAULT_TEMPERATURE,
        metavar="T",
        help=f"repair: temperature of sampled candidates (default {DEFAULT_TEMPERATURE:g})",
    )
    group.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="S",
        help=f"repair: sampled candidate k uses seed S+k (default {DEFAULT_SEED})",
    )
    group.add_argument(
        "--candidate-tokens",
        type=int,
        default=DEFAULT_CANDIDATE_TOKENS,
        metavar="K",
        help="repair: the most one candidate may write; its cap is room for the functions shown, "
        f"at least 1024 (default {DEFAULT_CANDIDATE_TOKENS})",
    )
    group.add_argument(
        "--module-checks",
        type=int,
        default=DEFAULT_MODULE_CHECKS,
        metavar="M",
        help="repair: when the suite never reports, check candidates module by module if "
        f"it has at most M test modules; 0: never (default {DEFAULT_MODULE_CHECKS})",
    )
    group.add_argument(
        "--redraws",
        type=int,
        default=DEFAULT_REDRAWS,
        metavar="D",
        help="repair: ask a slot again, sampled, up to D more times while its reply repeats "
        f"the original's or an earlier candidate's code (default {DEFAULT_REDRAWS})",
    )
    group.add_argument(
        "--feedback",
        choices=FEEDBACKS,
        default=DEFAULT_FEEDBACK,
        help="repair: what a later round is shown: replay, the best failing candidate as the "
        "model's own reply and its failure; tried, every change tested so far as a diff, "
        f"asking for a different one (default {DEFAULT_FEEDBACK})",
    )
    group.add_argument(
        "--focus",
        choices=FOCUSES,
        default=DEFAULT_FOCUS,
        help="repair: rotate: with several functions shown, each sampled first-round "
        "candidate asks for one of them in turn; off: every candidate asks for all "
        f"(default {DEFAULT_FOCUS})",
    )


def strategy_for(args: argparse.Namespace) -> Strategy:
    """``--strategy``, or the provider's default."""
    chosen: Strategy | None = args.strategy
    if chosen is not None:
        return chosen
    return default_strategy(args.provider)


def repair_options_from(args: argparse.Namespace) -> RepairOptions:
    """The repair options of these flags.

    Raises:
        pydantic.ValidationError: a value out of its range (the caller makes it one line).
    """
    return RepairOptions(
        candidates=args.candidates,
        rounds=args.rounds,
        round_candidates=args.round_candidates,
        temperature=args.temperature,
        seed=args.seed,
        candidate_tokens=args.candidate_tokens,
        module_checks=args.module_checks,
        redraws=args.redraws,
        feedback=args.feedback,
        focus=args.focus,
    )
