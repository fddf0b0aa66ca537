"""The local model's speed in a real run, from llama-server's own per-request timings.

One ``--provider local`` run on the paginator fixture (greedy, a few turns). For each
turn: the whole prompt (``usage.input_tokens``), the tokens the server processed for it
(``timings.prompt_n``; the rest came from its prompt cache), prompt and generation
speed, and the turn's latency. Then the sandbox's share of the run's wall time: its
``run_tests`` calls and the final test run, against the whole run.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import Budgets
from sandbox_agent.localmodel import server
from sandbox_agent.localmodel.timings import sandbox_seconds, turn_rows
from sandbox_agent.providers.options import LocalOptions

TASK = "Page numbers start at 1; fix the paginator so that the tests pass."
TURNS = 5


def main(argv: list[str]) -> int:
    started = time.monotonic()
    server.ensure_running()
    warm = time.monotonic() - started
    with tempfile.TemporaryDirectory(prefix="localmodel-bench-") as scratch:
        began = time.monotonic()
        result = run_task(
            RunConfig(
                task=TASK,
                fixture="paginator",
                provider="local",
                provider_options=LocalOptions(ledger_path=str(Path(scratch) / "l.sqlite3")),
                budgets=Budgets(max_iterations=TURNS, max_wall_seconds=600),
                trace_dir=Path(scratch) / "runs",
            )
        )
        wall = time.monotonic() - began
        lines = Path(result.trace_path).read_text(encoding="utf-8").splitlines()
        events = [json.loads(line) for line in lines]
    rows = turn_rows(events)
    print(f"\nlocal model: server ready in {warm:.1f} s; run {result.status}, {wall:.1f} s wall")
    print(
        "| turn | prompt tokens | processed | reused | prompt tok/s | generated "
        + "| gen tok/s | latency s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for number, row in enumerate(rows, start=1):
        print(
            f"| {number} | {row['prompt_tokens']:.0f} | {row['processed']:.0f} | "
            f"{row['reused']:.0%} | {row['prompt_tps']:.1f} | {row['gen_tokens']:.0f} | "
            f"{row['gen_tps']:.1f} | {row['latency_s']:.1f} |"
        )
    if rows:
        model_s = sum(r["latency_s"] for r in rows)
        sandbox_s = sandbox_seconds(events)
        print(
            f"median prompt {statistics.median(r['prompt_tps'] for r in rows):.1f} tok/s, "
            f"generation {statistics.median(r['gen_tps'] for r in rows):.1f} tok/s, "
            f"turn {statistics.median(r['latency_s'] for r in rows):.1f} s; "
            f"model {model_s / wall:.0%} of the wall time, sandbox {sandbox_s / wall:.0%} "
            f"({sandbox_s:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
