"""Eval benchmark: HumanEvalFix reference plans at ``--jobs 1`` and ``--jobs 2`` (the
speed-up), and the control plan (``--no-fix``). Prints wall times and pass counts.

    python -m benchmarks.eval_bench [--limit N] [--skip-control]

Scripted reference and control plans validate the harness; they are not model results.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_LIMIT = 164


def _run(limit: int, *, jobs: int, fix: bool) -> tuple[int, int, float]:
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.running.executor import run_all
    from sandbox_agent.evals.running.options import EvalOptions
    from sandbox_agent.evals.running.progress import ProgressBar
    from sandbox_agent.evals.tasks import humanevalfix
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    rows = humanevalfix.load_rows(humanevalfix.dataset_path())[:limit]
    with tempfile.TemporaryDirectory(prefix="eval-bench-") as scratch:
        cases = humanevalfix.build_suite(rows, Path(scratch) / "suite", fix=fix)
        options = EvalOptions(jobs=jobs, trace_dir=Path(scratch) / "traces")
        began = time.monotonic()
        label = f"{'reference' if fix else 'control'} jobs={jobs}"
        records = run_all(
            cases,
            options,
            backend_factory=lambda: DockerBackend(reap_on_first_use=False),
            run_task=run_task,
            progress=ProgressBar(len(cases), label=label),
        )
        wall = time.monotonic() - began
    return sum(record.passed for record in records), len(records), wall


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per measurement, then the speed-up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="rows to run")
    parser.add_argument("--skip-control", action="store_true")
    args = parser.parse_args(argv)
    print("eval bench: HumanEvalFix, scripted plans (harness validation, not model results)")
    results: dict[int, float] = {}
    for jobs in (1, 2):
        passed, runs, wall = _run(args.limit, jobs=jobs, fix=True)
        results[jobs] = wall
        print(
            f"reference jobs={jobs}: {passed}/{runs} passed, wall {wall:.1f} s, "
            f"{wall / max(runs, 1):.2f} s/task"
        )
    print(f"speed-up jobs=2 over jobs=1: {results[1] / results[2]:.2f}x")
    if not args.skip_control:
        passed, runs, wall = _run(args.limit, jobs=2, fix=False)
        print(f"control (no fix) jobs=2: {passed}/{runs} passed, wall {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
