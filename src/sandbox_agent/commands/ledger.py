"""`sandbox-agent ledger`: reserved, settled and remaining estimated spend per experiment."""

from __future__ import annotations

import argparse

HELP = "show estimated model spend per experiment (reserved, settled, remaining)"
DEFAULT_STALE_SECONDS = 3600.0
"""``--expire-stale`` without ``--older-than``: reservations older than an hour."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--ledger PATH``, ``--experiment NAME``, ``--expire-stale [--older-than S]``."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--ledger", metavar="PATH", help="the ledger file (default: state folder)")
    parser.add_argument(
        "--experiment", metavar="NAME", help="show only this experiment (default: all)"
    )
    parser.add_argument(
        "--expire-stale",
        action="store_true",
        help="stop counting open reservations left by interrupted runs",
    )
    parser.add_argument(
        "--older-than",
        type=float,
        metavar="S",
        default=DEFAULT_STALE_SECONDS,
        help=f"with --expire-stale: only reservations older than S seconds "
        f"(default {DEFAULT_STALE_SECONDS:g})",
    )


def run(args: argparse.Namespace) -> int:
    """Print the ledger's summary; with ``--expire-stale``, expire old open reservations first.

    Raises:
        UsageError: a bad ``--older-than``, or a ledger file that cannot be opened.
    """
    import json
    from pathlib import Path

    from sandbox_agent.errors import UsageError
    from sandbox_agent.ledger import PRICES_AS_OF, Ledger

    if not args.older_than >= 0:
        raise UsageError("--older-than must be a number of seconds >= 0")
    ledger = Ledger(Path(args.ledger) if args.ledger else None)
    expired = ledger.expire_stale(args.older_than) if args.expire_stale else None
    spends = ledger.summary(args.experiment)
    note = f"costs are estimates from the price table dated {PRICES_AS_OF}, not billed amounts"
    if args.json:
        document = {
            "ledger": str(ledger.path),
            "prices_as_of": PRICES_AS_OF,
            "note": note,
            "expired": expired,
            "experiments": [spend.model_dump() for spend in spends],
        }
        print(json.dumps(document, indent=2))
        return 0
    print(f"ledger {ledger.path} ({note})")
    if expired is not None:
        print(f"expired {expired} open reservation(s) older than {args.older_than:g} s")
    if not spends:
        print(
            "no spend recorded"
            + (f" for experiment {args.experiment!r}" if args.experiment else "")
        )
        return 0
    header = (
        "experiment",
        "budget",
        "reserved",
        "settled",
        "remaining",
        "open",
        "requests",
        "runs",
    )
    rows = [header]
    for spend in spends:
        budget = "-" if spend.budget_usd is None else f"${spend.budget_usd:.4f}"
        remaining = "-" if spend.remaining_usd is None else f"${spend.remaining_usd:.4f}"
        rows.append(
            (
                spend.experiment,
                budget,
                f"${spend.reserved_usd:.4f}",
                f"${spend.settled_usd:.4f}",
                remaining,
                str(spend.open_reservations),
                str(spend.requests),
                str(spend.runs),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0
