"""`sandbox-agent preflight`: daemon, image, runtime and isolation; exit 0 only if all hold."""

from __future__ import annotations

import argparse

HELP = "check that sandboxes can run here: daemon, image, runtime, a verified probe"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--runtime runc|runsc`` and ``--json``."""
    parser.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="the container runtime to check (default runc; runsc is gVisor)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Run the checks; print JSON or one line per check (with what to do when it failed)."""
    from sandbox_agent.sandbox.docker.preflight import run_preflight

    report = run_preflight(args.runtime)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        for check in report.checks:
            mark = "ok  " if check.ok else "FAIL"
            line = f"{mark} {check.name}: {check.detail}"
            print(line if check.ok else f"{line} -> {check.fix}")
        print(f"preflight {args.runtime}: {'ready' if report.ok else 'NOT ready'}")
    return 0 if report.ok else 1
