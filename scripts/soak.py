"""Run the whole suite again and again under a CPU load, to find flaky tests before CI does.

``make test-soak RUNS=5 LOAD=2 [ORDER=random] [SEED=N]`` (issue 21). Each run is a full
``pytest`` of the suite, in declared or random order (``pytest-random-order``, the seed
printed and recorded), while ``LOAD`` busy-loop processes keep the cores busy. Every run's
output is kept under ``.soak/``; a summary (runs, load, failures, the failed test ids with
the run and seed that failed them) is printed and written to ``.soak/summary.json``.
Exit 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandbox_agent.stress.load import busy_loops

OUT_DIR = Path(".soak")
DEFAULT_RUNS = 5
DEFAULT_LOAD = 2
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
SUMMARY_LINE = re.compile(
    r"^=*\s*((?:\d+ \w+, )*\d+ (?:passed|failed|errors?|xfailed|skipped)\b.* in [\d.]+s.*?)\s*=*$",
    re.MULTILINE,
)
"""pytest's last line, ``1 failed, 1070 passed, 4 xfailed in 402.92s (0:06:42)``, with or
without the ``=`` rule around it (``-q`` leaves it out)."""


@dataclass
class SoakRun:
    """One full run of the suite."""

    index: int
    order: str
    seed: int | None
    exit_code: int
    seconds: float
    summary: str
    failed: list[str] = field(default_factory=list)


def _pytest_argv(order: str, seed: int | None, extra: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra]
    if order == "random":
        argv += ["--random-order-bucket=module", f"--random-order-seed={seed}"]
    return argv


def run_once(index: int, order: str, seed: int | None, extra: list[str]) -> SoakRun:
    """One whole suite run, its output kept in ``.soak/run-<index>.log``."""
    log = OUT_DIR / f"run-{index}.log"
    started = time.monotonic()
    with log.open("wb") as out:
        done = subprocess.run(
            _pytest_argv(order, seed, extra), stdout=out, stderr=subprocess.STDOUT, check=False
        )
    text = log.read_text(errors="replace")
    summaries = SUMMARY_LINE.findall(text)
    return SoakRun(
        index=index,
        order=order,
        seed=seed,
        exit_code=done.returncode,
        seconds=round(time.monotonic() - started, 1),
        summary=summaries[-1] if summaries else "no pytest summary (see the log)",
        failed=sorted(set(FAILED_LINE.findall(text))),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="whole-suite runs")
    parser.add_argument("--load", type=int, default=DEFAULT_LOAD, help="busy-loop processes")
    parser.add_argument("--order", choices=("declared", "random"), default="declared")
    parser.add_argument("--seed", type=int, help="first random-order seed (then seed+1, ...)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.load < 0:
        parser.error("--runs must be at least 1 and --load at least 0")
    OUT_DIR.mkdir(exist_ok=True)
    first_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    runs: list[SoakRun] = []
    with busy_loops(args.load):
        for index in range(1, args.runs + 1):
            seed = first_seed + index - 1 if args.order == "random" else None
            run = run_once(index, args.order, seed, args.pytest_args)
            runs.append(run)
            seed_note = f" seed {seed}" if seed is not None else ""
            print(
                f"soak run {index}/{args.runs}{seed_note}: {run.summary} ({run.seconds} s)",
                flush=True,
            )
            for test_id in run.failed:
                print(f"  failed: {test_id}", flush=True)
            # After every run, not only at the end: a soak is hours long, and the runs
            # already made are evidence even when the session around it stops.
            write_summary(runs, args.runs, args.load, args.order)
    failures = sum(run.exit_code != 0 for run in runs)
    print(f"soak: {len(runs)} runs, load {args.load}, order {args.order}, failures: {failures}")
    return 0 if failures == 0 else 1


def write_summary(runs: list[SoakRun], planned: int, load: int, order: str) -> None:
    """``.soak/summary.json``, replaced whole (temp file, then rename)."""
    summary = {
        "runs": len(runs),
        "planned": planned,
        "load": load,
        "order": order,
        "failures": sum(run.exit_code != 0 for run in runs),
        "commit": _commit(),
        "date": time.strftime("%Y-%m-%d"),
        "detail": [asdict(run) for run in runs],
    }
    partial = OUT_DIR / "summary.json.partial"
    partial.write_text(json.dumps(summary, indent=1) + "\n")
    partial.replace(OUT_DIR / "summary.json")


def _commit() -> str | None:
    """The commit the soak ran on (with ``+dirty`` for local changes), or None outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}+dirty" if dirty else head


if __name__ == "__main__":
    sys.exit(main())
