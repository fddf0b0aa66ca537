"""`sandbox-agent stress`: bounded sandbox lifecycle runs; exit 0 only when nothing leaked."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox_agent.stress import StressReport

HELP = "sandbox lifecycle stress: exits, floods, cancels, outside kills; counts leftovers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``stress``."""
    from sandbox_agent.stress.runner import DEFAULT_CONCURRENCY, DEFAULT_RUNS

    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"sandbox runs in all (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        metavar="K",
        help=f"sandboxes at once (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="the container runtime (default runc; runsc is gVisor)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the mix of workloads, for a repeatable session (default 0)",
    )
    parser.add_argument(
        "--cpu-load",
        action="store_true",
        help="run the second half under a host busy loop in K processes",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Run the session, print the report; 0 only with no unverified completion or leftover.

    Raises:
        UsageError: a flag is out of range.
        SetupError: Docker or the runner image is missing.
    """
    from pydantic import ValidationError

    from sandbox_agent.errors import UsageError
    from sandbox_agent.stress import StressConfig, run_stress
    from sandbox_agent.stress.runner import MAX_CONCURRENCY, MAX_RUNS

    try:
        config = StressConfig(
            runs=args.runs,
            concurrency=args.concurrency,
            runtime=args.runtime,
            seed=args.seed,
            cpu_load=args.cpu_load,
        )
    except ValidationError:
        raise UsageError(
            f"--runs must be 1..{MAX_RUNS} and --concurrency 1..{MAX_CONCURRENCY}"
        ) from None

    def progress(outcome: object) -> None:
        if not args.json:
            print(".", end="", file=sys.stderr, flush=True)

    report = run_stress(config, on_outcome=progress)
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        print(file=sys.stderr)
        _print_text(report)
    return 0 if report.ok else 1


def _print_text(report: StressReport) -> None:
    print(
        f"runtime {report.runtime}: {report.runs} runs, concurrency {report.concurrency}, "
        f"seed {report.seed}, {report.wall_seconds} s"
    )
    print(f"unverified_completions {report.unverified_completions}")
    print(f"leftover_containers    {report.leftover_containers}")
    print(f"leftover_workspaces    {report.leftover_workspaces}")
    print(f"unexpected_outcomes    {report.unexpected_outcomes}")
    print(f"cleanup_failures       {report.cleanup_failures}")
    print(
        "by classification: " + ", ".join(f"{k} {v}" for k, v in report.by_classification.items())
    )
    lat = report.latency_ms
    print(f"latency ms: p50 {lat.p50}  p90 {lat.p90}  p99 {lat.p99}  max {lat.max}")
    for line in report.problems:
        print(f"problem: {line}")
    print("OK" if report.ok else "NOT OK")
