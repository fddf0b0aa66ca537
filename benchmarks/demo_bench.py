"""Demo benchmark: ``make demo``'s paginator run, end to end through the CLI, start-up
included (issue 5 target: a median under 1 s on runc). Prints medians of the whole
command, of the CLI start-up alone (``run --help``), and of the run's own wall clock.

    python -c "from benchmarks import demo_bench; demo_bench.main([])"
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

RUNS = 7
CLI = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "sandbox-agent")
TASK = "Fix the pagination bug: page 1 must start at the first item."


def _timed(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return (time.monotonic() - started) * 1000, done


def main(argv: list[str]) -> int:
    """Run the demo ``--runs`` times per runtime and print medians."""
    parser = argparse.ArgumentParser(prog="demo_bench")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--runtime", action="append", choices=("runc", "runsc"))
    args = parser.parse_args(argv)
    startup = statistics.median(_timed([CLI, "run", "--help"])[0] for _ in range(args.runs))
    print(f"demo bench: CLI start-up (run --help) median {startup:.0f} ms")
    with tempfile.TemporaryDirectory(prefix="demo-bench-") as traces:
        for runtime in args.runtime or ["runc", "runsc"]:
            whole: list[float] = []
            inside: list[float] = []
            for _ in range(args.runs):
                command = [CLI, "run", "--fixture", "paginator", "--task", TASK, "--json"]
                command += ["--runtime", runtime, "--trace-dir", traces]
                elapsed, done = _timed(command)
                if done.returncode == 2:
                    print(f"{runtime}: demo could not run: {done.stderr.strip()}")
                    return 1
                result = json.loads(done.stdout)
                if result["status"] != "SUCCEEDED":
                    print(f"{runtime}: demo did not succeed: {result['reason']}")
                    return 1
                whole.append(elapsed)
                inside.append(result["budget_used"]["wall_seconds"] * 1000)
            print(
                f"{runtime}: demo end to end median {statistics.median(whole):.0f} ms "
                f"(run itself {statistics.median(inside):.0f} ms; target < 1000 ms on runc); "
                f"{len(whole)} runs"
            )
    return 0
