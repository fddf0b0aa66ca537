"""Invalid-output rate of each tool protocol with the local model (docs/MODELS.md).

``python -m benchmarks.protocol_bench [--protocols P,...] [--tasks N] [--out DIR]``

Runs HumanEvalFix tasks with ``--provider local`` once per protocol, through the real
controller (sandbox, ledger) with each task's eval configuration, cut at ``--turns``
model turns, and reads every run's trace: the model's
turns, the invalid outputs among them, and the shape of each invalid reply, so that a
second spelling of a call can be judged by its numbers. Only the **even-numbered**
HumanEvalFix tasks are used: they are the development split; the odd ones are kept
for reporting.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sandbox_agent.settings import PROJECT_ROOT

PROTOCOLS = ("tools", "required", "json_schema", "text")
DEFAULT_TASKS = 6
DEFAULT_TURNS = 4
DEFAULT_DATASET = (
    Path(__file__).resolve().parent.parent / "evals/data/humanevalfix/humanevalpack-python.jsonl"
)


def even_tasks(count: int) -> list[str]:
    """The first ``count`` even-numbered HumanEvalFix task ids (the development split)."""
    return [f"humanevalfix-python-{2 * i}" for i in range(count)]


def reply_shape(reply: str) -> str:
    """What an invalid reply looked like: the spelling it used, or why it was not one."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return "prose or broken JSON" if text else "empty"
    if not isinstance(data, dict):
        return "JSON, not an object"
    keys = set(data)
    if keys == {"name", "arguments"}:
        return '{"name", "arguments"}'
    if keys == {"tool", "args"}:
        return '{"tool", "args"} with bad args'
    if "tool" in keys:
        return '{"tool", ...} other keys'
    return "other object"


def read_trace(path: Path) -> dict[str, Any]:
    """Turns, invalid outputs and their reply shapes, denials and timings of one run."""
    turns, invalid, denials = 0, 0, 0
    shapes: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    last_reply = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        kind = event.get("event") or event.get("type")
        if kind == "model_turn":
            turns += 1
            last_reply = str(event.get("reply", ""))
        elif kind == "invalid_output":
            invalid += 1
            codes[str(event.get("denial"))] += 1
            shapes[reply_shape(last_reply)] += 1
        elif kind == "tool_call" and event.get("denial"):
            denials += 1
    return {
        "turns": turns,
        "invalid": invalid,
        "denials": denials,
        "shapes": shapes,
        "codes": codes,
    }


def run_protocol(
    protocol: str, tasks: list[str], out: Path, dataset: Path, turns: int
) -> dict[str, Any]:
    """``tasks`` under ``protocol``, each run cut at ``turns`` model turns (not at the
    eval's wall clock: on a busy machine that would cut every run at its first turn)."""
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.running.options import EvalOptions, build_config
    from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
    from sandbox_agent.providers.options import LocalOptions

    totals: dict[str, Any] = {"runs": 0, "passed": 0, "turns": 0, "invalid": 0, "denials": 0}
    shapes: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    options = EvalOptions(
        provider="local",
        trace_dir=out / protocol,
        provider_options=LocalOptions(
            tool_protocol=protocol,  # type: ignore[arg-type]
            ledger_path=str(out / "ledger.sqlite3"),
        ),
    )
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as scratch:
        cases = build_cases(
            "humanevalfix", SuiteOptions(task_ids=tasks, dataset=str(dataset)), Path(scratch)
        )
        for case in cases:
            config = build_config(case, options, f"{protocol}-{case.task.id}-{time.time_ns()}")
            budgets = config.budgets.model_copy(
                update={"max_iterations": turns, "max_wall_seconds": 1800.0}
            )
            result = run_task(config.model_copy(update={"budgets": budgets}))
            seen = read_trace(Path(result.trace_path))
            totals["runs"] += 1
            totals["passed"] += int(result.status == "SUCCEEDED")
            statuses[result.status] += 1
            for key in ("turns", "invalid", "denials"):
                totals[key] += seen[key]
            shapes.update(seen["shapes"])
    totals["statuses"] = dict(statuses)
    totals["shapes"] = dict(shapes)
    return totals


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.protocol_bench")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results" / "protocols")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS)
    args = parser.parse_args(argv)
    tasks = even_tasks(args.tasks)
    print("| protocol | runs | turns | invalid outputs | rate | denials | passed | statuses |")
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for protocol in args.protocols.split(","):
        totals = run_protocol(protocol, tasks, args.out, args.dataset, args.turns)
        summary[protocol] = totals
        rate = totals["invalid"] / totals["turns"] if totals["turns"] else 0.0
        print(
            f"| {protocol} | {totals['runs']} | {totals['turns']} | {totals['invalid']} | "
            f"{rate:.0%} | {totals['denials']} | {totals['passed']} | {totals['statuses']} |",
            flush=True,
        )
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({p: s["shapes"] for p, s in summary.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
