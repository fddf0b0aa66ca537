"""Invalid-output rate of each tool protocol with the local model (docs/MODELS.md).

``python -m benchmarks.protocol_bench [--protocols P,...] [--tasks N] [--out DIR]``

Runs HumanEvalFix tasks with ``--provider local`` once per protocol, through the real
``eval`` command (controller, sandbox, ledger), and reads every run's trace: the model's
turns, the invalid outputs among them, and the shape of each invalid reply, so that a
second spelling of a call can be judged by its numbers. Only the **even-numbered**
HumanEvalFix tasks are used: they are the development split; the odd ones are kept
for reporting.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from sandbox_agent.settings import PROJECT_ROOT

PROTOCOLS = ("tools", "required", "json_schema", "text")
DEFAULT_TASKS = 6
DEFAULT_DATASET = Path("/work/shared/data/humanevalfix/humanevalpack-python.jsonl")


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


def run_protocol(protocol: str, tasks: list[str], out: Path, dataset: Path) -> dict[str, Any]:
    """One eval of ``tasks`` under ``protocol``; totals over its runs."""
    results = out / protocol
    command = [
        str(PROJECT_ROOT / ".venv/bin/sandbox-agent"),
        "eval",
        "--suite",
        "humanevalfix",
        "--dataset",
        str(dataset),
        "--tasks",
        ",".join(tasks),
        "--provider",
        "local",
        "--tool-protocol",
        protocol,
        "--jobs",
        "1",
        "--results-dir",
        str(results),
    ]
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL)
    report = json.loads((results / "report.json").read_text())
    totals: dict[str, Any] = {"runs": 0, "passed": 0, "turns": 0, "invalid": 0, "denials": 0}
    shapes: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for run in report["runs"]:
        seen = read_trace(Path(run["trace_path"]))
        totals["runs"] += 1
        totals["passed"] += int(run["passed"])
        statuses[run["status"]] += 1
        for key in ("turns", "invalid", "denials"):
            totals[key] += seen[key]
        shapes.update(seen["shapes"])
    totals["statuses"] = dict(statuses)
    totals["shapes"] = dict(shapes)
    totals["wall_seconds"] = report.get("wall_seconds")
    return totals


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.protocol_bench")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results" / "protocols")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    args = parser.parse_args(argv)
    tasks = even_tasks(args.tasks)
    print("| protocol | runs | turns | invalid outputs | rate | denials | passed | statuses |")
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for protocol in args.protocols.split(","):
        totals = run_protocol(protocol, tasks, args.out, args.dataset)
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
