"""Solved tasks per CPU-hour: the repair strategy against the greedy one-shot, side by side.

The same few HumanEvalFix rows of the development split (even-numbered), the same local
model and server, one after the other in one process: first the one-shot (one request,
judged by the held-out check), then the agent (``--strategy repair``, judged the same
way). CPU time is what the model server and this process used (``/proc``), plus the
sandboxes' wall time (their containers' CPU is not visible from here, and they are
short). Printed: rows solved, CPU-hours, solved per CPU-hour and the ratio of the two,
and the sandbox's share of the agent's wall time.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROWS = tuple(f"humanevalfix-python-{n}" for n in (10, 20, 30, 40, 50, 60))
"""Even-numbered rows: the development split, never the reported one."""
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of ``pid`` (the model server) and of this process."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    if pid is None:
        return total
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return total
    return total + (int(fields[11]) + int(fields[12])) / TICKS


def main(argv: list[str]) -> int:
    from devtools.eval_local import local_completer
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.running.one_run import run_case
    from sandbox_agent.evals.running.oneshot import run_one
    from sandbox_agent.evals.running.options import EvalOptions
    from sandbox_agent.evals.tasks import humanevalfix
    from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
    from sandbox_agent.localmodel import server
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    record = server.ensure_running()
    rows = {humanevalfix.task_id(r): r for r in humanevalfix.load_rows(humanevalfix.dataset_path())}
    backend = DockerBackend()
    figures: dict[str, dict[str, float]] = {}
    try:
        complete = local_completer()
        cpu, wall = _cpu_seconds(record.pid), time.monotonic()
        solved = sum(run_one(rows[task_id], complete, backend).passed for task_id in ROWS)
        figures["one-shot"] = {
            "solved": solved,
            "cpu_s": _cpu_seconds(record.pid) - cpu,
            "wall_s": time.monotonic() - wall,
        }
        with tempfile.TemporaryDirectory(prefix="repair-bench-") as scratch:
            cases = build_cases(
                "humanevalfix", SuiteOptions(task_ids=list(ROWS)), Path(scratch) / "cases"
            )
            options = EvalOptions(
                provider="local",
                strategy="repair",
                trace_dir=Path(scratch) / "traces",
                max_wall_seconds=900,
            )
            cpu, wall = _cpu_seconds(record.pid), time.monotonic()
            records = [run_case(case, 0, options, backend, run_task) for case in cases]
            sandbox_s = sum(r.durations.sandbox_ms / 1000 + r.durations.held_out_s for r in records)
            figures["agent (repair)"] = {
                "solved": sum(r.held_out.passed for r in records),
                "cpu_s": _cpu_seconds(record.pid) - cpu + sandbox_s,
                "wall_s": time.monotonic() - wall,
                "sandbox_share": sandbox_s / max(time.monotonic() - wall, 1e-9),
            }
    finally:
        backend.close()
    print(f"\nrepair vs one-shot on {len(ROWS)} even HumanEvalFix rows (development split)")
    print("| | solved | CPU h | solved per CPU h | wall s | sandbox share of wall |")
    print("|---|---|---|---|---|---|")
    per_hour = {}
    for name, row in figures.items():
        hours = row["cpu_s"] / 3600
        per_hour[name] = row["solved"] / hours if hours else 0.0
        share = f"{row['sandbox_share']:.1%}" if "sandbox_share" in row else "-"
        print(
            f"| {name} | {row['solved']:.0f}/{len(ROWS)} | {hours:.3f} | {per_hour[name]:.1f} "
            f"| {row['wall_s']:.0f} | {share} |"
        )
    if per_hour.get("one-shot"):
        print(f"ratio agent/one-shot, solved per CPU-hour: "
              f"{per_hour['agent (repair)'] / per_hour['one-shot']:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
